import { Redis } from 'ioredis';
import {
  admittedUnlimited,
  cleanTokens,
  findTooLarge,
  isLimited,
  refusedDecision,
  TightestScope,
  tooLargeDecision,
  type LimitDecision,
} from './decision.js';
import { MemoryRateLimiter } from './memory.js';
import { ADJUST_LUA, ADMIT_LUA } from './redis-scripts.js';
import type { LimitFamily, LimitScope, RateLimiter } from './types.js';
import { WINDOW_SECONDS, type Dimension } from './window.js';

export interface LimiterLogger {
  warn(msg: string): void;
  info(msg: string): void;
}

export interface RedisLimiterOptions {
  /** redis://[:password@]host:port[/db]; ignored when `client` is given. */
  url?: string;
  /** A client to use instead of one built from `url` (it is then not closed by `close()`). */
  client?: Redis;
  /** Prepended to every key, so several deployments or test runs can share one Redis. */
  keyPrefix?: string;
  /** Window clock in ms; by default the Redis server's clock, so all instances share one notion of time. */
  now?: () => number;
  /** How long the first admissions after start wait for the initial connection (default 1 s). */
  connectWaitMs?: number;
  /** A command slower than this counts as Redis failing. */
  commandTimeoutMs?: number;
  /** After a failure, how long requests go straight to the local limiter before Redis is tried again. */
  coolDownMs?: number;
  logger?: LimiterLogger;
}

type ScriptClient = Redis & {
  rlAdmit(...args: (string | number)[]): Promise<number[]>;
  rlAdjust(...args: (string | number)[]): Promise<number>;
};

const consoleLogger: LimiterLogger = {
  warn: (m) => console.warn(m),
  info: (m) => console.info(m),
};

/**
 * Limiter shared by every gateway instance through Redis. When Redis is down, slow, or restarting,
 * each instance falls back to a local MemoryRateLimiter with the same quotas (logged once per
 * outage) and goes back to Redis as soon as a command succeeds again: a limiter outage costs
 * precision across instances, never a failed request.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly fallback: MemoryRateLimiter;
  private readonly redis: ScriptClient;
  private readonly ownsClient: boolean;
  private readonly prefix: string;
  private readonly now?: () => number;
  private readonly coolDownMs: number;
  private readonly logger: LimiterLogger;
  private degraded = false;
  private everReady = false;
  private skipUntil = 0;
  /** Settles when the first connection attempt is over; until then admissions wait for it. */
  private firstConnect?: Promise<void>;

  constructor(opts: RedisLimiterOptions = {}) {
    this.prefix = opts.keyPrefix ?? 'gw:';
    this.now = opts.now;
    this.coolDownMs = opts.coolDownMs ?? 1_000;
    this.logger = opts.logger ?? consoleLogger;
    this.fallback = new MemoryRateLimiter({ now: opts.now });
    this.ownsClient = !opts.client;
    const client =
      opts.client ??
      new Redis(opts.url ?? 'redis://127.0.0.1:6379', {
        // Fail fast instead of queueing: a request must never wait on a Redis that is not there.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: opts.commandTimeoutMs ?? 500,
        connectTimeout: 1_000,
        retryStrategy: (times) => Math.min(100 * times, 2_000),
      });
    client.defineCommand('rlAdmit', { lua: ADMIT_LUA });
    client.defineCommand('rlAdjust', { lua: ADJUST_LUA });
    // Without a listener ioredis reports every reconnect failure as an unhandled error.
    client.on('error', (e: Error) => this.failed(e));
    client.on('ready', () => {
      this.everReady = true;
    });
    this.redis = client as ScriptClient;
    if (client.status !== 'ready') this.firstConnect = this.awaitFirstConnect(opts.connectWaitMs ?? 1_000);
  }

  /** True when the connection to Redis is up. */
  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  /** True while requests are being limited locally because Redis is unavailable. */
  get isDegraded(): boolean {
    return this.degraded;
  }

  async admit(family: LimitFamily, scopes: readonly LimitScope[], tokensIn: number): Promise<LimitDecision> {
    const tokens = cleanTokens(tokensIn);
    const limited = scopes.filter(isLimited);
    if (limited.length === 0) return admittedUnlimited();
    const tooLarge = findTooLarge(limited, tokens);
    if (tooLarge) return tooLargeDecision(family, tooLarge, tokens, {});
    if (this.firstConnect) await this.firstConnect;
    if (!this.usable()) return this.fallback.admitNow(family, scopes, tokens);

    const args: (string | number)[] = [limited.length];
    for (const s of limited) args.push(this.key(family, s));
    args.push(this.now ? this.now() : -1, tokens, WINDOW_SECONDS);
    for (const s of limited) args.push(s.quota.rpm ?? 0, s.quota.tpm ?? 0);
    let reply: number[];
    try {
      reply = await this.redis.rlAdmit(...args);
    } catch (e) {
      this.failed(e);
      return this.fallback.admitNow(family, scopes, tokens);
    }
    this.succeeded();
    return decide(family, limited, tokens, reply);
  }

  async adjustTokens(family: LimitFamily, scopes: readonly LimitScope[], delta: number): Promise<void> {
    if (!Number.isFinite(delta) || delta === 0) return;
    const rounded = delta > 0 ? Math.ceil(delta) : -Math.ceil(-delta);
    const limited = scopes.filter((s) => (s.quota.tpm ?? 0) > 0);
    if (limited.length === 0) return;
    if (!this.usable()) {
      this.fallback.adjustNow(family, limited, rounded);
      return;
    }
    const args: (string | number)[] = [limited.length];
    for (const s of limited) args.push(this.key(family, s));
    args.push(this.now ? this.now() : -1, rounded, WINDOW_SECONDS);
    try {
      await this.redis.rlAdjust(...args);
      this.succeeded();
    } catch (e) {
      this.failed(e);
      this.fallback.adjustNow(family, limited, rounded);
    }
  }

  async close(): Promise<void> {
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
   * Right after start the connection is still being made; admitting locally in that moment would
   * hand every instance a full quota of its own. So the first requests wait for it, but never
   * longer than `ms`, and not at all once it failed.
   */
  private awaitFirstConnect(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.redis.off('ready', done);
        this.redis.off('error', done);
        this.redis.off('end', done);
        this.firstConnect = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.redis.once('ready', done);
      this.redis.once('error', done);
      this.redis.once('end', done);
    });
  }

  /** Hash-tagged by family so all keys of one admission live in one Redis Cluster slot. */
  private key(family: LimitFamily, scope: LimitScope): string {
    return `${this.prefix}rl:{${family}}:${scope.id}`;
  }

  private usable(): boolean {
    if (this.redis.status !== 'ready') {
      // A lost connection is an outage even before any command failed; the first connect at
      // start is not (its failure arrives as an 'error' event).
      if (this.everReady) this.failed(new Error(`connection ${this.redis.status}`));
      return false;
    }
    return Date.now() >= this.skipUntil;
  }

  private failed(e: unknown): void {
    this.skipUntil = Date.now() + this.coolDownMs;
    if (this.degraded) return;
    this.degraded = true;
    const why = e instanceof Error ? e.message : String(e);
    this.logger.warn(`rate limiter: Redis unavailable (${why}); enforcing limits per instance until it answers again`);
  }

  private succeeded(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.logger.info('rate limiter: Redis answers again; limits are shared across instances once more');
  }
}

/** Turns the admission script's flat reply into a decision with OpenAI-style headers. */
function decide(family: LimitFamily, scopes: readonly LimitScope[], tokens: number, reply: number[]): LimitDecision {
  const allowed = Number(reply[0]) === 1;
  const tight = new TightestScope();
  let worstWait = -1;
  let worstScope: LimitScope | undefined;
  let worstDim: Dimension = 'requests';
  let worstUsed = 0;
  for (let i = 0; i < scopes.length; i++) {
    const s = scopes[i]!;
    const base = 2 + 6 * i;
    const [usedR, usedT, resetR, resetT, waitR, waitT] = reply.slice(base, base + 6).map(Number) as [
      number, number, number, number, number, number,
    ];
    const rpm = s.quota.rpm ?? 0;
    const tpm = s.quota.tpm ?? 0;
    if (rpm > 0) tight.offer('requests', rpm, usedR, resetR);
    if (tpm > 0) tight.offer('tokens', tpm, usedT, resetT);
    if (allowed) continue;
    if (waitR >= 0 && waitR > worstWait) {
      worstWait = waitR;
      worstScope = s;
      worstDim = 'requests';
      worstUsed = usedR;
    }
    if (waitT >= 0 && waitT > worstWait) {
      worstWait = waitT;
      worstScope = s;
      worstDim = 'tokens';
      worstUsed = usedT;
    }
  }
  const headers = tight.headers();
  if (allowed) return { allowed: true, retryAfterSeconds: 0, headers };
  return refusedDecision(family, worstScope ?? scopes[0]!, worstDim, worstUsed, worstDim === 'requests' ? 1 : tokens, worstWait, headers);
}
