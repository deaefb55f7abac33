import type { Agent } from 'undici';
import type { Clock } from '../core/clock.js';
import { guardedAgent } from '../http/guarded-agent.js';
import type { Store } from '../store/types.js';
import type { OutboxRecord } from '../store/webhook-types.js';
import { signedHeaders } from './signing.js';
import { webhookDeliveries, webhookDeliveryDuration } from '../ops/metrics.js';

export interface DispatcherSettings {
  /** How often the outbox is looked at; 0 disables delivery on this instance. */
  intervalMs: number;
  /** Deliveries in flight at once, per instance. */
  concurrency: number;
  /** Whole attempt (connect, headers, body) per delivery. */
  timeoutMs: number;
  /** A claimed delivery is this instance's for this long; then another instance may retry it. */
  leaseMs: number;
  /** First retry delay; each next one doubles (with jitter), capped at `maxDelayMs`. */
  retryBaseMs: number;
  maxDelayMs: number;
  /** After this many failed attempts the delivery is marked failed. */
  maxAttempts: number;
  allowPrivateNetworks: boolean;
}

interface Log {
  warn(obj: object, msg: string): void;
}

/** Event types the metrics name; anything else is counted as `other` (labels stay a bounded set). */
const KNOWN_EVENTS = new Set(['video.completed', 'video.failed', 'video.cancelled']);

/** Bytes of a receiver's answer read at most (it is discarded; only the status matters). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Delay before attempt `n + 1` after `n` failures: exponential with ±25 % jitter, so retries of many events spread out. */
export function retryDelay(failures: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
  return Math.max(0, Math.round(exp * (0.75 + random() * 0.5)));
}

/**
 * Delivers the webhook outbox at least once. Rows are leased with a compare-and-swap, so of several
 * instances exactly one attempts a delivery at a time; every attempt is logged (status, latency,
 * error); a 2xx ends it, anything else is retried with backoff until `maxAttempts`. Targets are
 * reached through an SSRF-guarded agent, with a deadline per attempt, and redirects are not followed.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private ticking = false;
  private readonly running = new Set<Promise<void>>();
  private readonly agent: Agent;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly settings: DispatcherSettings,
    private readonly log: Log,
  ) {
    this.agent = guardedAgent({ allowPrivateNetworks: settings.allowPrivateNetworks, connectTimeoutMs: settings.timeoutMs });
  }

  start(): void {
    if (this.timer || this.settings.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.tick(), this.settings.intervalMs);
    this.timer.unref();
  }

  /** Stops claiming; waits for deliveries in flight (each bounded by its timeout). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.running]);
    await this.agent.close().catch(() => undefined);
  }

  /** Claims what this instance has room for and starts delivering it. Exposed for tests. */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const room = this.settings.concurrency - this.inFlight;
      if (room <= 0) return;
      const claimed = await this.store.claimDeliveries(this.clock.now(), room, this.settings.leaseMs);
      for (const row of claimed) {
        this.inFlight++;
        const p = this.deliver(row)
          .catch((e) => this.log.warn({ delivery: row.id, err: (e as Error).message }, 'webhook delivery bookkeeping failed'))
          .finally(() => {
            this.inFlight--;
            this.running.delete(p);
          });
        this.running.add(p);
      }
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'webhook outbox scan failed; will retry');
    } finally {
      this.ticking = false;
    }
  }

  private async deliver(row: OutboxRecord): Promise<void> {
    const attempt = row.attempts + 1;
    const endpoint = row.endpointId ? await this.store.getWebhookEndpoint(row.endpointId) : undefined;
    const started = this.clock.now();
    let status: number | null = null;
    let error: string | null = null;
    if (!endpoint) error = 'the signing endpoint no longer exists';
    else if (endpoint.disabledAt !== null && endpoint.url === row.url) error = 'the endpoint was disabled';
    else ({ status, error } = await this.post(row, endpoint.secret));
    const now = this.clock.now();
    const ok = status !== null && status >= 200 && status < 300 && error === null;
    const final = !endpoint || (endpoint.disabledAt !== null && endpoint.url === row.url) || attempt >= this.settings.maxAttempts;
    const outcome = ok
      ? { state: 'delivered' as const }
      : final
        ? { state: 'failed' as const }
        : { state: 'pending' as const, nextAttemptAt: now + retryDelay(attempt, this.settings.retryBaseMs, this.settings.maxDelayMs) };
    await this.store.recordDeliveryAttempt(row.id, { endpointId: row.endpointId, attempt, status, error, latencyMs: now - started, now }, outcome);
    // Counted once the attempt is recorded, so the metric never runs ahead of the delivery log.
    const event = KNOWN_EVENTS.has(row.eventType) ? row.eventType : 'other';
    webhookDeliveries.inc({ event, outcome: outcome.state === 'pending' ? 'retrying' : outcome.state === 'failed' ? 'gave_up' : 'delivered' });
    if (endpoint) webhookDeliveryDuration.observe({ result: ok ? 'ok' : 'error' }, (now - started) / 1000);
  }

  private async post(row: OutboxRecord, secret: string): Promise<{ status: number | null; error: string | null }> {
    let url: URL;
    try {
      url = new URL(row.url);
    } catch {
      return { status: null, error: 'invalid URL' };
    }
    const headers = { 'content-type': 'application/json', 'user-agent': 'video-embeddings-gateway-webhooks', ...signedHeaders(secret, row.id, row.payload, new Date(this.clock.now())) };
    try {
      const res = await this.agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers,
        body: row.payload,
        headersTimeout: this.settings.timeoutMs,
        bodyTimeout: this.settings.timeoutMs,
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
      // The answer is not used; read a little of it (so the connection can be reused) and drop it.
      let read = 0;
      try {
        for await (const chunk of res.body) {
          read += (chunk as Buffer).length;
          if (read > MAX_ANSWER_BYTES) break;
        }
      } catch {
        // The receiver broke its answer off (reset, truncated body): we cannot tell it took the
        // event, so the attempt counts as failed and is retried (receivers dedupe on webhook-id).
        res.body.destroy();
        return { status: res.statusCode, error: 'the connection broke before the answer ended' };
      }
      if (read > MAX_ANSWER_BYTES) res.body.destroy();
      return { status: res.statusCode, error: res.statusCode >= 300 && res.statusCode < 400 ? 'redirects are not followed' : null };
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'EBLOCKED' || String((e as Error).message).includes('not allowed')) return { status: null, error: 'the target resolves to a private or local address' };
      if ((e as Error).name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
        return { status: null, error: `no answer within ${this.settings.timeoutMs} ms` };
      return { status: null, error: `connection failed${code ? ` (${code})` : ''}` };
    }
  }
}
