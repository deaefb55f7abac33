import { describe, expect, it } from 'vitest';
import { recordUpstreamCall, upstreamHealth } from '../../src/ops/upstream-health.js';

describe('upstream health record', () => {
  it('counts outcomes, keeps the latest 200 latencies and the latest 20 failures, newest first', () => {
    const name = `up-${Math.random()}`;
    for (let i = 1; i <= 300; i++) recordUpstreamCall(name, i % 10 === 0 ? '5xx' : '2xx', i, 1_000 * i);
    recordUpstreamCall(name, 'timeout', 5, 999_000);
    const h = upstreamHealth(name);
    expect(h.calls).toEqual({ '2xx': 270, '5xx': 30, timeout: 1 });
    expect(h.latency_ms.samples).toBe(200);
    // The ring holds the newest 200 samples: 5 and 102..300.
    expect(h.latency_ms.max).toBe(300);
    expect(h.latency_ms.p50).toBeGreaterThan(150);
    expect(h.recent_errors).toHaveLength(20);
    expect(h.recent_errors[0]).toEqual({ at: new Date(999_000).toISOString(), outcome: 'timeout' });
    expect(h.recent_errors[1]!.outcome).toBe('5xx');
  });

  it('an upstream never called has empty figures', () => {
    expect(upstreamHealth('never')).toEqual({ calls: {}, latency_ms: { samples: 0, p50: null, p95: null, max: null }, recent_errors: [] });
  });
});
