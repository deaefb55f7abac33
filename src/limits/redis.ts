import { elapsedMs } from '../core/clock.js';
import { randomUUID } from 'node:crypto';
import { admittedUnlimited, cleanTokens, findTooLarge, isLimited, tooLargeDecision, type LimitDecision } from './decision.js';
import { LocalFallback } from './fallback.js';
import { HandOver } from './redis-handover.js';
import { answerAll, CallIds, CORRECTION_WAIT_MS, MAX_BATCH, turnCall, TurnQueue, type PendingOperation, type ScriptCall } from './redis-batch.js';
import { decide, releasedHeaders, usedPerScope } from './redis-reply.js';
import { firstAttempt, scriptClient } from './redis-client.js';
import type { LimitFamily, LimitScope, RateLimiter } from './types.js';
import { WINDOW_SECONDS } from './window.js';
import { consoleLogger, type LimiterLogger, type RedisLimiterOptions, type ScriptClient } from './redis-options.js';

/** ioredis's message for a command that got no answer within `commandTimeout`. */
const COMMAND_TIMED_OUT = 'Command timed out';

export type { LimiterLogger, RedisLimiterOptions } from './redis-options.js';

/**
 * Limiter shared by every gateway instance through Redis. When Redis is down, slow, or restarting,
 * each instance falls back to local windows (logged once per outage) that continue from what Redis
 * last reported and hold this instance's share of each quota (see fallback.ts), and goes back to
 * Redis as soon as a command succeeds again, handing it what was admitted meanwhile: a limiter
 * outage costs some precision across instances, never a failed request.
 *
 * The admissions and token corrections of one event-loop turn share one script call, applied in
 * the order they were made (redis-batch.ts): under load a round trip and a script run serve many
 * requests, and a request waits at most for the end of its turn before its admission is sent. A
 * correction waits up to `CORRECTION_WAIT_MS` for the next admission's call instead of making its own.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly fallback: LocalFallback;
  private readonly redis: ScriptClient;
  private readonly ownsClient: boolean;
  private readonly prefix: string;
  /** The sorted set of live instances (heartbeats), which each leaves at close. */
  private readonly registryKey: string;
  private readonly now?: () => number;
  private readonly coolDownMs: number;
  private readonly logger: LimiterLogger;
  private degraded = false;
  private everReady = false;
  private skipUntil = 0;
  private readonly instanceId = randomUUID();
  private readonly ids: CallIds;
  private readonly heartbeatMs: number;
  private heartbeatTimer?: NodeJS.Timeout;
  private readonly keyOf = (family: LimitFamily) => (s: LimitScope) => this.key(family, s.id);
  /** What is owed to the shared windows after an outage, and the check-in after a reconnect. */
  private readonly handOver: HandOver;
  /** Settles when the first connection attempt is over; until then admissions wait for it. */
  private firstConnect?: Promise<void>;
  /** Admissions and corrections of one event-loop turn, in the order made, sent as one script call per family. */
  private readonly turn: TurnQueue<PendingOperation>;

  constructor(opts: RedisLimiterOptions = {}) {
    this.turn = new TurnQueue<PendingOperation>(
      (family, items) => answerAll(items, (b) => this.sendTurn(family as LimitFamily, b)),
      MAX_BATCH,
      opts.correctionWaitMs ?? CORRECTION_WAIT_MS,
    );
    this.prefix = opts.keyPrefix ?? 'gw:';
    this.ids = new CallIds(this.prefix);
    this.registryKey = `${this.prefix}rl:instances`;
    this.now = opts.now;
    this.coolDownMs = opts.coolDownMs ?? 1_000;
    this.logger = opts.logger ?? consoleLogger;
    this.fallback = new LocalFallback(opts.now);
    this.heartbeatMs = opts.heartbeatMs ?? 5_000;
    this.ownsClient = !opts.client;
    const client = scriptClient(opts);
    // Without a listener ioredis reports every reconnect failure as an unhandled error.
    client.on('error', (e: Error) => this.failed(e));
    this.redis = client;
    this.handOver = new HandOver({
      redis: client,
      fallback: this.fallback,
      clock: () => this.clock(),
      windowKey: (family, id) => this.key(family, id),
      recordKey: (windowKey) => this.ids.record(windowKey),
      registryKey: this.registryKey,
      instanceId: this.instanceId,
      generationKey: `${this.prefix}rl:generation`,
      epochKey: `${this.prefix}rl:epoch`,
      heartbeatMs: this.heartbeatMs,
    });
    client.on('ready', () => {
      // Back after a lost connection: Redis may have restarted, so nothing is decided there until
      // this instance has checked in (redis-handover.ts).
      if (this.everReady) this.handOver.reconnected();
      else void this.handOver.checkIn();
      this.everReady = true;
    });
    this.heartbeatTimer = setInterval(() => void this.handOver.checkIn(), this.heartbeatMs);
    this.heartbeatTimer.unref();
    if (client.status === 'ready') void this.handOver.checkIn();
    // Right after start the connection is still being made; admitting locally in that moment would
    // hand every instance a full quota of its own. So the first requests wait for it, but never
    // longer than `connectWaitMs`, and not at all once it failed.
    else {
      this.firstConnect = firstAttempt(client, opts.connectWaitMs ?? 1_000).then(() => {
        this.firstConnect = undefined;
      });
    }
  }

  /** True when the connection to Redis is up. */
  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  /** Live instances sharing the quotas, as Redis last reported (sets this one's share in an outage). */
  get instances(): number {
    return this.fallback.instances;
  }

  /** True while requests are being limited locally because Redis is unavailable. */
  get isDegraded(): boolean {
    return this.degraded;
  }

  async admit(family: LimitFamily, scopes: readonly LimitScope[], tokensIn: number): Promise<LimitDecision> {
    const tokens = cleanTokens(tokensIn);
    const limited = scopes.filter(isLimited);
    if (limited.length === 0) return admittedUnlimited();
    if (this.firstConnect) await this.firstConnect;
    const decision = this.usable()
      ? await new Promise<LimitDecision>((resolve, reject) => this.turn.push(family, { kind: 'admission', scopes, limited, tokens, resolve, reject }))
      : this.fallback.admit(family, scopes, tokens, this.keyOf(family));
    // A request over a whole minute's tokens goes through the windows all the same, which refuse it
    // without counting it (no window holds more than its quota): so its answer describes them with
    // the same headers as the in-process limiter's, and only the verdict is told apart here.
    const tooLarge = findTooLarge(limited, tokens);
    return tooLarge ? tooLargeDecision(family, tooLarge, tokens, decision.headers) : decision;
  }

  async adjustTokens(family: LimitFamily, scopes: readonly LimitScope[], delta: number, second?: number): Promise<void> {
    if (!Number.isFinite(delta) || delta === 0) return;
    const rounded = delta > 0 ? Math.ceil(delta) : -Math.ceil(-delta);
    const limited = scopes.filter((s) => (s.quota.tpm ?? 0) > 0);
    if (limited.length === 0) return;
    if (!this.usable()) {
      this.fallback.adjust(family, limited, rounded, this.keyOf(family), second);
      return;
    }
    // Nobody waits on a correction: it rides along with the family's next admission (redis-batch.ts).
    return new Promise((resolve, reject) => this.turn.push(family, { kind: 'correction', limited, delta: rounded, second, resolve, reject }, true));
  }

  async release(family: LimitFamily, scopes: readonly LimitScope[], tokensIn: number, second?: number): Promise<Record<string, string> | undefined> {
    const tokens = cleanTokens(tokensIn);
    const limited = scopes.filter(isLimited);
    if (limited.length === 0) return {};
    if (!this.usable()) return this.fallback.release(family, limited, tokens, this.keyOf(family), second);
    // The local mirror gives it back too, so an outage right now does not count it.
    this.fallback.windows.releaseNow(family, limited, tokens, second);
    const args: (string | number)[] = [limited.length];
    for (const s of limited) args.push(this.key(family, s.id));
    args.push(this.clock(), tokens, WINDOW_SECONDS, second ?? -1);
    try {
      // The admission given back may be one made locally during an outage that Redis has not been
      // told of yet: taken back before it is, it would take another admission's request out of the
      // window (or nothing), and then be counted when the outage's usage arrives.
      if (this.handOver.pending) await this.handOver.settled();
      // The script's reply holds the windows after the give-back: the refused answer's headers.
      const reply = await this.redis.rlRelease(...args);
      this.succeeded();
      return releasedHeaders(limited, reply);
    } catch (e) {
      // Not given back in Redis: the admission's headers stay true.
      this.failed(e);
      return undefined;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeatTimer);
    // Corrections still waiting for an admission to ride along with go now, before the connection ends.
    this.turn.flushAll();
    if (this.redis.status === 'ready') {
      // Leaving the registry at once lowers the count the other instances divide by.
      await this.redis.zrem(this.registryKey, this.instanceId).catch(() => undefined);
    }
    await this.fallback.close();
    if (!this.ownsClient) return;
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
      else this.redis.disconnect();
    } catch {
      this.redis.disconnect();
    }
  }

  /**
   * Applies one turn's admissions and corrections of a family in one script call, in the order they
   * were made. If Redis fails or is in its cool-down, every one of them is applied locally instead,
   * in the same order.
   */
  private async sendTurn(family: LimitFamily, items: PendingOperation[]): Promise<void> {
    const keyOf = this.keyOf(family);
    let replies: number[][] | undefined;
    if (this.usable()) {
      let call: ScriptCall | undefined;
      try {
        // What was admitted here during an outage goes in first (and, if Redis lost its data, the
        // minute as known here): decided without it, the first admissions after the outage would
        // spend the minute's quota a second time.
        if (this.handOver.pending) await this.handOver.settled();
        call = turnCall(items, keyOf, this.clock(), this.ids.turn(family));
        const answers = await this.redis.rlTurn(call.keys.length, ...call.keys, ...call.args);
        if (answers.length < items.filter((it) => it.kind === 'admission').length) {
          // The turn found its key set and changed nothing: a call ioredis sent again after a
          // reconnect, whose first run's answers were lost with the connection. Its operations are
          // decided below as a failed call's, and the hand-over undoes the first run (TURN_LUA).
          this.fallback.tookOver(call.keys[0]!, call.keys.slice(1));
        } else {
          replies = answers;
          this.succeeded();
        }
      } catch (e) {
        // A call that timed out or lost its connection may have run in Redis all the same, or may
        // still run there (a hung Redis that resumes reads what was sent before): the hand-over
        // finds out which by the turn's id, so that the admissions decided below count once.
        if (call) this.fallback.tookOver(call.keys[0]!, call.keys.slice(1));
        this.failed(e);
      }
    }
    let admission = 0;
    for (const it of items) {
      if (it.kind === 'correction') {
        if (!replies) this.fallback.adjust(family, it.limited, it.delta, keyOf, it.second);
        it.resolve();
        continue;
      }
      const reply = replies?.[admission++];
      try {
        if (!Array.isArray(reply)) throw new Error('no reply for this admission');
        // Remember what the shared windows hold, so an outage continues from it.
        for (let j = 0; j < it.limited.length; j++) this.fallback.learn(family, it.limited[j]!, ...usedPerScope(reply, j));
        it.resolve(decide(family, it.limited, it.tokens, reply));
      } catch {
        // Every queued caller gets an answer, whatever happened to the others of its batch.
        it.resolve(this.fallback.admit(family, it.scopes, it.tokens, keyOf));
      }
    }
  }

  /** The window clock sent with each script: ours when one was given, else -1 (the server's). */
  private clock(): number {
    return this.now ? this.now() : -1;
  }

  /**
   * Hash-tagged by family so all keys of one admission live in one Redis Cluster slot. `w2` is the
   * window layout with a summary (redis-window-lua.ts): the scripts of the earlier layout would
   * change buckets without it, so during a rolling upgrade the two versions count apart.
   */
  private key(family: LimitFamily, scopeId: string): string {
    return `${this.prefix}rl:{${family}}:w2:${scopeId}`;
  }

  private usable(): boolean {
    if (this.redis.status !== 'ready') {
      // A lost connection is an outage even before any command failed; the first connect at
      // start is not (its failure arrives as an 'error' event).
      if (this.everReady) this.failed(new Error(`connection ${this.redis.status}`));
      return false;
    }
    return elapsedMs() >= this.skipUntil;
  }

  private failed(e: unknown): void {
    this.skipUntil = elapsedMs() + this.coolDownMs;
    // ioredis rejects a command after `commandTimeout` but keeps it queued on the connection: with
    // Redis hung (connection open, nothing read) every probe after a cool-down adds one more, and
    // each costs its caller the whole timeout. Dropping the socket rejects all of them
    // (`maxRetriesPerRequest: 0`); the fresh connection is not ready until Redis answers its
    // handshake, so meanwhile requests go to the local windows at once. A client given to us may
    // be shared with others, so only our own is reset.
    if (this.ownsClient && e instanceof Error && e.message === COMMAND_TIMED_OUT) this.redis.stream?.destroy();
    if (this.degraded) return;
    this.degraded = true;
    const why = e instanceof Error ? e.message : String(e);
    this.logger.warn(`rate limiter: Redis unavailable (${why}); enforcing limits per instance until it answers again`);
  }

  private succeeded(): void {
    if (this.fallback.hasUnshared) void this.handOver.share();
    if (!this.degraded) return;
    this.degraded = false;
    this.logger.info('rate limiter: Redis answers again; limits are shared across instances once more');
  }
}
