import type { Agent } from 'undici';
import type { Clock } from '../core/clock.js';
import { guardedAgent } from '../http/guarded-agent.js';
import type { Store } from '../store/types.js';
import type { OutboxRecord } from '../store/webhook-types.js';
import { postDelivery, type PostResult } from './delivery-post.js';
import { ReceiverSlots, slotOf, type Slot } from './receiver-slots.js';
import { signingSecrets } from './signing-endpoint.js';
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

const DEFAULT_PER_ORIGIN = 4;
const DEFAULT_PER_ACCOUNT = 2;

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
 * SSRF-guarded agent (IP literals are checked before connecting), with a deadline per attempt,
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
    const signing = await signingSecrets(this.store, row);
    const result: PostResult = signing.secrets ? await postDelivery(this.agent, row, signing.secrets, this.attemptMs, this.clock) : { status: null, error: signing.refusal, unreachable: false };
    const now = this.clock.now();
    if (signing.secrets) this.slots.note(slot, result.status !== null, result.unreachable, now);
    const { status, error } = result;
    const ok = status !== null && status >= 200 && status < 300 && error === null;
    const final = !signing.secrets || attempt >= this.settings.maxAttempts;
    const outcome = ok
      ? { state: 'delivered' as const }
      : final
        ? { state: 'failed' as const }
        : { state: 'pending' as const, nextAttemptAt: now + retryDelay(attempt, this.settings.retryBaseMs, this.settings.maxDelayMs) };
    const recorded = await this.store.recordDeliveryAttempt(row.id, { endpointId: row.endpointId, attempt, status, error, latencyMs: now - started, now }, outcome, row.leaseUntil ?? 0);
    if (signing.secrets) webhookDeliveryDuration.observe({ result: ok ? 'ok' : 'error' }, (now - started) / 1000);
    if (!recorded) {
      this.log.warn({ delivery: row.id, attempt }, 'webhook attempt ended after its lease; its outcome was not recorded');
      return;
    }
    // Counted once the attempt is recorded, so the metric never runs ahead of the delivery log.
    const event = KNOWN_EVENTS.has(row.eventType) ? row.eventType : 'other';
    webhookDeliveries.inc({ event, outcome: outcome.state === 'pending' ? 'retrying' : outcome.state === 'failed' ? 'gave_up' : 'delivered' });
  }
}
