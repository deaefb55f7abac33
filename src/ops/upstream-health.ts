/**
 * What the operator's upstream health view shows beyond the circuit state: per upstream, calls by
 * outcome since start, the latency of the most recent calls, and the most recent failures (when,
 * which outcome; never a body, a URL or a header, so nothing upstream-derived needs redacting).
 * Process-wide, like the Prometheus registry it sits beside; bounded by the configured upstreams
 * and fixed-size rings.
 */
const LATENCY_SAMPLES = 200;
const RECENT_ERRORS = 20;

export interface UpstreamFailure {
  at: number;
  outcome: string;
}

interface Stats {
  outcomes: Record<string, number>;
  latencies: number[];
  next: number;
  errors: UpstreamFailure[];
}

const stats = new Map<string, Stats>();

export function recordUpstreamCall(upstream: string, outcome: string, ms: number, at = Date.now()): void {
  let s = stats.get(upstream);
  if (!s) {
    s = { outcomes: {}, latencies: [], next: 0, errors: [] };
    stats.set(upstream, s);
  }
  s.outcomes[outcome] = (s.outcomes[outcome] ?? 0) + 1;
  if (s.latencies.length < LATENCY_SAMPLES) s.latencies.push(ms);
  else s.latencies[s.next] = ms;
  s.next = (s.next + 1) % LATENCY_SAMPLES;
  if (outcome !== '2xx' && outcome !== '1xx' && outcome !== '3xx') {
    s.errors.unshift({ at, outcome });
    if (s.errors.length > RECENT_ERRORS) s.errors.pop();
  }
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

export interface UpstreamHealthView {
  calls: Record<string, number>;
  latency_ms: { samples: number; p50: number | null; p95: number | null; max: number | null };
  recent_errors: { at: string; outcome: string }[];
}

export function upstreamHealth(upstream: string): UpstreamHealthView {
  const s = stats.get(upstream);
  const sorted = [...(s?.latencies ?? [])].sort((a, b) => a - b);
  return {
    calls: { ...(s?.outcomes ?? {}) },
    latency_ms: { samples: sorted.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: percentile(sorted, 100) },
    recent_errors: (s?.errors ?? []).map((e) => ({ at: new Date(e.at).toISOString(), outcome: e.outcome })),
  };
}
