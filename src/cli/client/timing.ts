/**
 * How often the client polls and how long it backs off. The defaults follow the spec (poll every
 * 5 s, backoff 1, 2, 4, 8 s); GATEWAY_CLI_POLL_MS and GATEWAY_CLI_BACKOFF_MS exist so tests against
 * fast simulators need not wait real seconds.
 */
export interface ClientTiming {
  pollMs: number;
  /** The length of one second of backoff (1,000 ms outside tests). */
  backoffMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Retries of a download cut short, each resuming where the last stopped. */
  downloadRetries: number;
}

function envMs(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

export function clientTiming(): ClientTiming {
  return {
    pollMs: envMs('GATEWAY_CLI_POLL_MS', 5_000),
    backoffMs: envMs('GATEWAY_CLI_BACKOFF_MS', 1_000),
    headersTimeoutMs: 60_000,
    bodyTimeoutMs: 60_000,
    downloadRetries: 5,
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
