import type { Agent, Dispatcher } from 'undici';
import type { Clock } from '../core/clock.js';
import { guardedAgent } from '../http/guarded-agent.js';
import type { Store } from '../store/types.js';
import type { OutboxRecord, WebhookEndpoint } from '../store/webhook-types.js';
import { signedHeaders } from './signing.js';
import { ReceiverSlots, slotOf, type Slot } from './receiver-slots.js';
import { webhookDeliveries, webhookDeliveryDuration } from '../ops/metrics.js';

export interface DispatcherSettings {
  /** How often the outbox is looked at; 0 disables delivery on this instance. */
  intervalMs: number;
  /** Deliveries in flight at once, per instance. */
  concurrency: number;
  /** Deliveries in flight at once to one receiver origin (host:port), per instance (default 4). */
  perOriginConcurrency?: number;
  /** Deliveries in flight at once for one account, per instance (default 2). */
  perAccountConcurrency?: number;
  /** Whole attempt (connect, headers, body) per delivery; never more than half of `leaseMs`. */
  timeoutMs: number;
  /** A claimed delivery is this instance's for this long; then another instance may retry it. */
  leaseMs: number;
  /** First retry delay; each next one doubles (with jitter), capped at `maxDelayMs`. */
  retryBaseMs: number;
  maxDelayMs: number;
  /** After this many failed attempts the delivery is marked failed. */
  maxAttempts: number;
  allowPrivateNetworks: boolean;
  /** Finished deliveries and their attempt logs are deleted this long after their last attempt; 0 keeps them. */
  retentionMs?: number;
}

/** How often an instance deletes finished deliveries past their retention, and how many at a time. */
const PURGE_EVERY_MS = 10 * 60_000;
const PURGE_BATCH = 500;

interface Log {
  warn(obj: object, msg: string): void;
}

/** Event types the metrics name; anything else is counted as `other` (labels stay a bounded set). */
const KNOWN_EVENTS = new Set(['video.completed', 'video.failed', 'video.cancelled']);

/** Bytes of a receiver's answer read at most (it is discarded; only the status matters). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Time spent at most reading (and dropping) the body of an answer once its status has arrived. */
const DRAIN_MS = 1_000;

const DEFAULT_PER_ORIGIN = 4;
const DEFAULT_PER_ACCOUNT = 2;

/** What one POST came to: the status, why it failed, and whether the receiver never answered at all. */
interface PostResult {
  status: number | null;
  error: string | null;
  /** A timeout before any answer or a connection failure: counts towards the receiver's back-off. */
  unreachable: boolean;
}

/** Delay before attempt `n + 1` after `n` failures: exponential with ±25 % jitter, so retries of many events spread out. */
export function retryDelay(failures: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
  return Math.max(0, Math.round(exp * (0.75 + random() * 0.5)));
}

/**
 * Delivers the webhook outbox at least once. Rows are leased with a compare-and-swap, so of several
 * instances exactly one attempts a delivery at a time, and an attempt's outcome is recorded only
 * while its lease still holds; every attempt is logged (status, latency, error); a 2xx ends it,
 * anything else is retried with backoff until `maxAttempts`. Targets are reached through an
 * SSRF-guarded agent (IP literals are checked here, before connecting), with a deadline per attempt,
 * and redirects are not followed.
 *
 * Slots are shared fairly: at most `perAccountConcurrency` deliveries of one account and
 * `perOriginConcurrency` to one receiver are in flight at once, rows are claimed round-robin across
 * accounts, and a receiver that keeps timing out is backed off, so no tenant can hold every slot by
 * pointing its jobs at a receiver that never answers.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** The tick in progress, if any; stop() waits for it. */
  private current: Promise<void> | undefined;
  private inFlight = 0;
  private readonly slots: ReceiverSlots;
  private lastPurge = -Infinity;
  private purging = false;
  private readonly running = new Set<Promise<void>>();
  private readonly agent: Agent;
  private readonly perAccount: number;
  /** The attempt's deadline: the configured timeout, but at most half the lease, so an attempt never outlives its claim. */
  private readonly attemptMs: number;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly settings: DispatcherSettings,
    private readonly log: Log,
  ) {
    this.perAccount = Math.max(1, settings.perAccountConcurrency ?? DEFAULT_PER_ACCOUNT);
    this.slots = new ReceiverSlots(this.perAccount, Math.max(1, settings.perOriginConcurrency ?? DEFAULT_PER_ORIGIN));
    this.attemptMs = Math.max(1, Math.min(settings.timeoutMs, Math.floor(settings.leaseMs / 2)));
    this.agent = guardedAgent({ allowPrivateNetworks: settings.allowPrivateNetworks, connectTimeoutMs: this.attemptMs });
  }

  start(): void {
    if (this.timer || this.stopping || this.settings.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.tick(), this.settings.intervalMs);
    this.timer.unref();
  }

  /**
   * Stops claiming: a tick in progress starts nothing more and hands back the rows it had leased
   * but not started (no attempt counted); then waits for deliveries in flight (each bounded by
   * its deadline) before closing the connections.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.current;
    await Promise.allSettled([...this.running]);
    await this.agent.close().catch(() => undefined);
  }

  /** Claims what this instance has room for and starts delivering it. Exposed for tests. */
  tick(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    this.purgeIfDue();
    this.current ??= this.claim().finally(() => {
      this.current = undefined;
    });
    return this.current;
  }

  /**
   * Deletes a batch of finished deliveries past their retention, at most once per PURGE_EVERY_MS
   * (and at the first tick): without it the outbox and its attempt log grow for ever. Beside the
   * deliveries, never in their way; a failure is logged and tried at the next turn.
   */
  private purgeIfDue(): void {
    const keep = this.settings.retentionMs ?? 0;
    const now = this.clock.now();
    if (keep <= 0 || this.purging || now - this.lastPurge < PURGE_EVERY_MS) return;
    this.purging = true;
    this.lastPurge = now;
    this.store
      .purgeFinishedDeliveries(now - keep, PURGE_BATCH)
      .then(
        (n) => {
          // A full batch: more are due, so the next turn goes on with them.
          if (n >= PURGE_BATCH) this.lastPurge = -Infinity;
        },
        (e) => this.log.warn({ err: (e as Error).message }, 'webhook history purge failed; will retry'),
      )
      .finally(() => (this.purging = false));
  }

  private async claim(): Promise<void> {
    try {
      const room = this.settings.concurrency - this.inFlight;
      if (room <= 0) return;
      // A few rows past each account's cap, so that one busy receiver of an account does not hide
      // its deliveries to others; the page also has room for the rows of accounts already at their cap.
      const depth = this.perAccount * 2 + 2;
      const due = await this.store.dueDeliveries(this.clock.now(), { limit: Math.min(1_000, (room + this.slots.busyAccounts) * depth), perAccount: depth });
      for (const c of due) {
        if (this.stopping || this.inFlight >= this.settings.concurrency) break;
        const slot = slotOf(c.accountId, c.url);
        const now = this.clock.now();
        const pausedUntil = this.slots.pausedUntil(slot, now);
        if (pausedUntil !== undefined) {
          // Put off until the pause ends, without spending an attempt; the row stays pending.
          await this.store.deferDelivery(c.id, now, pausedUntil);
          continue;
        }
        if (!this.slots.hasRoom(slot)) continue;
        const row = await this.store.leaseDelivery(c.id, now, this.settings.leaseMs);
        if (!row) continue; // another instance took it, or it moved
        if (this.stopping) {
          // stop() came while the lease was being taken: give the row back untried.
          await this.store.releaseDelivery(row.id, row.leaseUntil ?? 0);
          break;
        }
        this.launch(row, slot);
      }
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'webhook outbox scan failed; will retry');
    }
  }

  private launch(row: OutboxRecord, slot: Slot): void {
    this.inFlight++;
    this.slots.take(slot);
    const p = this.deliver(row, slot)
      .catch((e) => this.log.warn({ delivery: row.id, err: (e as Error).message }, 'webhook delivery bookkeeping failed'))
      .finally(() => {
        this.inFlight--;
        this.slots.give(slot);
        this.running.delete(p);
        // A slot is free: look for more now rather than at the next interval, so the per-account
        // cap does not also cap an account's throughput at a few deliveries per interval.
        if (this.timer && !this.stopping) void this.tick();
      });
    this.running.add(p);
  }

  private async deliver(row: OutboxRecord, slot: Slot): Promise<void> {
    const attempt = row.attempts + 1;
    const started = this.clock.now();
    const signing = await this.signer(row);
    const result: PostResult = signing.endpoint ? await this.post(row, signing.endpoint.secret) : { status: null, error: signing.refusal, unreachable: false };
    const now = this.clock.now();
    if (signing.endpoint) this.slots.note(slot, result.status !== null, result.unreachable, now);
    const { status, error } = result;
    const ok = status !== null && status >= 200 && status < 300 && error === null;
    const final = !signing.endpoint || attempt >= this.settings.maxAttempts;
    const outcome = ok
      ? { state: 'delivered' as const }
      : final
        ? { state: 'failed' as const }
        : { state: 'pending' as const, nextAttemptAt: now + retryDelay(attempt, this.settings.retryBaseMs, this.settings.maxDelayMs) };
    const recorded = await this.store.recordDeliveryAttempt(row.id, { endpointId: row.endpointId, attempt, status, error, latencyMs: now - started, now }, outcome, row.leaseUntil ?? 0);
    if (signing.endpoint) webhookDeliveryDuration.observe({ result: ok ? 'ok' : 'error' }, (now - started) / 1000);
    if (!recorded) {
      this.log.warn({ delivery: row.id, attempt }, 'webhook attempt ended after its lease; its outcome was not recorded');
      return;
    }
    // Counted once the attempt is recorded, so the metric never runs ahead of the delivery log.
    const event = KNOWN_EVENTS.has(row.eventType) ? row.eventType : 'other';
    webhookDeliveries.inc({ event, outcome: outcome.state === 'pending' ? 'retrying' : outcome.state === 'failed' ? 'gave_up' : 'delivered' });
  }

  /**
   * The endpoint whose secret signs the delivery, or why nothing may be sent. An endpoint's own
   * event (the row's URL is the endpoint's) stops when the endpoint is disabled. A job's own target
   * is signed by the account's active endpoint: the one it was filed under while that is active,
   * else the account's first active one; with none left it fails, so a disabled endpoint's secret
   * never signs anything again.
   */
  private async signer(row: OutboxRecord): Promise<{ endpoint: WebhookEndpoint; refusal: null } | { endpoint: null; refusal: string }> {
    const own = row.endpointId ? await this.store.getWebhookEndpoint(row.endpointId) : undefined;
    if (row.endpointId && !own) return { endpoint: null, refusal: 'the signing endpoint no longer exists' };
    if (own && own.url === row.url) return own.disabledAt === null ? { endpoint: own, refusal: null } : { endpoint: null, refusal: 'the endpoint was disabled' };
    if (own && own.disabledAt === null) return { endpoint: own, refusal: null };
    const active = (await this.store.listWebhookEndpoints(row.accountId)).find((e) => e.disabledAt === null);
    return active ? { endpoint: active, refusal: null } : { endpoint: null, refusal: 'the account has no active webhook endpoint to sign with' };
  }

  private async post(row: OutboxRecord, secret: string): Promise<PostResult> {
    let url: URL;
    try {
      url = new URL(row.url);
    } catch {
      return { status: null, error: 'invalid URL', unreachable: false };
    }
    const headers = { 'content-type': 'application/json', 'user-agent': 'video-embeddings-gateway-webhooks', ...signedHeaders(secret, row.id, row.payload, new Date(this.clock.now())) };
    const deadline = AbortSignal.timeout(this.attemptMs);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers,
        body: row.payload,
        headersTimeout: this.attemptMs,
        bodyTimeout: this.attemptMs,
        signal: deadline,
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      // The guarded agent refuses a private address before connecting: a literal one at once, a name on the address it resolves to.
      if (code === 'EBLOCKED' || String((e as Error).message).includes('not allowed')) return { status: null, error: 'the target is or resolves to a private or local address', unreachable: false };
      if ((e as Error).name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
        return { status: null, error: `no answer within ${this.attemptMs} ms`, unreachable: true };
      return { status: null, error: `connection failed${code ? ` (${code})` : ''}`, unreachable: true };
    }
    // Only the status matters. The body is read a little (so the connection can be reused) and
    // dropped; a receiver that has answered 2xx has taken the event, however slowly the rest comes.
    const body = await drain(res.body, DRAIN_MS, deadline);
    if (body === 'broke') {
      // Broken off (reset, truncated) before its end: we cannot tell the receiver took the event,
      // so the attempt counts as failed and is retried (receivers dedupe on webhook-id).
      return { status: res.statusCode, error: 'the connection broke before the answer ended', unreachable: false };
    }
    return { status: res.statusCode, error: res.statusCode >= 300 && res.statusCode < 400 ? 'redirects are not followed' : null, unreachable: false };
  }
}

/**
 * Reads and drops an answer's body until it ends, MAX_ANSWER_BYTES have come or `ms` have passed
 * (or the attempt's deadline fired): 'ended', or 'cut' when it was stopped early; 'broke' when the
 * connection failed first.
 */
async function drain(body: Dispatcher.ResponseData['body'], ms: number, deadline: AbortSignal): Promise<'ended' | 'cut' | 'broke'> {
  let cut = false;
  const timer = setTimeout(() => {
    cut = true;
    body.destroy();
  }, ms);
  let read = 0;
  try {
    for await (const chunk of body) {
      read += (chunk as Buffer).length;
      if (read > MAX_ANSWER_BYTES) {
        cut = true;
        break;
      }
    }
    return cut ? 'cut' : 'ended';
  } catch {
    return cut || deadline.aborted ? 'cut' : 'broke';
  } finally {
    clearTimeout(timer);
    if (cut) body.destroy();
  }
}
