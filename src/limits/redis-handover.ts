import { randomUUID } from 'node:crypto';
import type { LocalFallback } from './fallback.js';
import type { ScriptClient } from './redis-options.js';
import type { LimitFamily } from './types.js';
import { WINDOW_SECONDS } from './window.js';

export interface HandOverDeps {
  redis: ScriptClient;
  fallback: LocalFallback;
  /** The window clock sent with each script (-1: the server's). */
  clock(): number;
  /** The shared window's key of a scope. */
  windowKey(family: LimitFamily, scopeId: string): string;
  /** A fresh id for one hand-over call on a window (RECORD_LUA), in the window's Redis Cluster hash slot. */
  recordKey(windowKey: string): string;
  /** The sorted set of live instances, and this instance's member in it. */
  registryKey: string;
  instanceId: string;
  /** A counter every instance's heartbeat increments, and a random value set when missing (see `checkIn`). */
  generationKey: string;
  epochKey: string;
  heartbeatMs: number;
}

/**
 * What an instance owes the shared windows when Redis answers again after an outage, so that the
 * minute of the outage is not admitted twice:
 *
 * - what it decided alone meanwhile (LocalFallback's unshared usage): its admissions added to the
 *   shared windows, its corrections and give-backs taken from them; with it, the turns whose calls
 *   failed and whose operations it decided locally instead: one Redis ran all the same (a timed-out
 *   call whose bytes it had received, run at once or when a hung Redis resumed) has what it changed
 *   undone, one it did not run is voided so that it changes nothing if it still arrives (TURN_LUA,
 *   RECORD_LUA). Each of those operations then counts once, as the client was told;
 * - when Redis came back without the writes it had taken (a restart without persistence or from an
 *   older snapshot, a flush, a failover to a replica that lagged), the current minute as this
 *   instance knows it: its local windows, which mirror what Redis last reported plus what was
 *   admitted here. Each shared window is raised to at least that (never lowered, so instances that
 *   all raise it count nothing twice), the missing part placed in the oldest seconds that held it.
 *
 * Lost writes show in two plain keys without expiry that every heartbeat reads. A counter it
 * increments: while Redis keeps its data it only grows, so a heartbeat that gets back no more than
 * the value this instance saw last means writes were lost (a Redis restored from an older snapshot
 * or a replica that lagged, which still hold the epoch). An epoch, a random value set when missing:
 * a Redis that came back empty has a new one, even when the other instances' check-ins already
 * pushed its new counter past this instance's last value (as after a second restart a few seconds
 * after the first, when that value was still small). Only then is the local view pushed: it lags
 * behind the shared window (what it learned from Redis is placed in the second it learned it, up
 * to a minute late), so pushing it after every reconnect would count a harmless blip against the
 * clients.
 *
 * From a reconnect until its check-in (heartbeat, hand-over) is done, admissions and give-backs
 * wait for it (`pending`/`settled`): one decided first would see the windows without the outage.
 */
export class HandOver {
  /** Set while usage is on its way to Redis. */
  private sharing?: Promise<void>;
  /** Set from a reconnect until its check-in is over. */
  private checking?: Promise<void>;
  /** The generation counter and the epoch as this instance last saw them. */
  private generation?: number;
  private epoch?: string;
  /** Redis lost writes: the local windows are to be pushed (again, if a push failed). */
  private raiseDue = false;

  constructor(private readonly d: HandOverDeps) {}

  /** True when Redis must be handed something before it decides (cheap: read on every script call). */
  get pending(): boolean {
    return this.checking !== undefined || this.sharing !== undefined || this.raiseDue || this.d.fallback.hasUnshared;
  }

  /** Resolves once Redis holds what this instance owes it (never rejects). */
  async settled(): Promise<void> {
    if (this.checking) await this.checking;
    await this.share();
  }

  /** The connection came back: check in at once, and hold admissions until that is done. */
  reconnected(): void {
    const check: Promise<void> = this.checkIn().finally(() => {
      if (this.checking === check) this.checking = undefined;
    });
    this.checking = check;
  }

  /**
   * The heartbeat: registers this instance and reads how many are live (a failure keeps the last
   * count), reads the generation, and hands over what is owed. An instance that gets no request
   * after an outage hands over all the same (this runs as soon as the connection is back).
   */
  async checkIn(): Promise<void> {
    const { redis, fallback } = this.d;
    if (redis.status !== 'ready') return;
    try {
      // Separate commands, not one script: the registry, the counter and the epoch may live in different Redis Cluster slots.
      const [live, generation, epoch] = await Promise.all([
        redis.rlHeartbeat(1, this.d.registryKey, this.d.instanceId, this.d.heartbeatMs * 3),
        redis.incr(this.d.generationKey),
        redis.rlEpoch(1, this.d.epochKey, randomUUID()),
      ]);
      const n = Number(live);
      if (Number.isInteger(n) && n > 0) fallback.instances = n;
      if (this.generation !== undefined && generation <= this.generation) this.raiseDue = true;
      if (this.epoch !== undefined && epoch !== this.epoch) this.raiseDue = true;
      this.generation = generation;
      this.epoch = epoch;
    } catch {
      // The admissions notice an outage on their own; the next heartbeat tries again.
      return;
    }
    if (fallback.hasUnshared || this.raiseDue) {
      await this.sharing;
      await this.share();
    }
  }

  /**
   * Sends what is owed, once: the outage's unshared usage first (added, or given back), then, when due, the local
   * windows (a raise to at least them, which already hold that usage). Both go out in this order on
   * one connection, so Redis applies them in it. Callers that come while it is under way wait for
   * the same one.
   */
  share(): Promise<void> {
    const { redis, fallback } = this.d;
    if (!this.sharing && (fallback.hasUnshared || this.raiseDue)) {
      const clock = this.d.clock();
      // A record Redis did not take is lost: it went away again, and the windows moved on meanwhile.
      // Each carries an id, so that one ioredis sends again after a reconnect counts once.
      const records = fallback.takeUnshared().map((u) =>
        redis.rlRecord(
          2 + u.turns.length,
          u.key,
          this.d.recordKey(u.key),
          ...u.turns.map(([turnKey]) => turnKey),
          clock,
          WINDOW_SECONDS,
          u.turns.length,
          ...u.turns.map(([, place]) => place),
          ...u.buckets.flat(),
        ),
      );
      const raising = this.raiseDue;
      this.raiseDue = false;
      const raises = raising
        ? [...fallback.windows.snapshot()].map((w) => redis.rlRaise(1, this.d.windowKey(w.family, w.id), clock, WINDOW_SECONDS, ...w.buckets.flat()))
        : [];
      this.sharing = Promise.allSettled([...records, ...raises]).then((out) => {
        this.sharing = undefined;
        // A raise never counts anything twice: one cut short by a lost connection is sent again
        // with the hand-over after the reconnect (not on a Redis that answers, which would repeat it
        // with every call).
        if (redis.status !== 'ready' && out.slice(records.length).some((r) => r.status === 'rejected')) this.raiseDue = true;
      });
    }
    return this.sharing ?? Promise.resolve();
  }
}
