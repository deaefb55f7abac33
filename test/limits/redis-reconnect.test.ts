import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisRateLimiter, type LimiterLogger } from '../../src/limits/redis.js';
import type { LimitScope } from '../../src/limits/types.js';
import { dropPrefix, REDIS_URL, RedisRelay, redisTestKeys } from './redis-helper.js';

/**
 * When Redis answers again after an outage, the minute's shared windows must hold what was admitted
 * in it: what the instances admitted alone during the outage (handed over), and, when Redis came back
 * without its data (a restart without persistence, a flush, an older snapshot), what it held before.
 * A client must not get a second quota in the minute of the outage. One instance reaches Redis
 * through a relay that plays the outage; a second one talks to Redis directly and sees the shared
 * windows. Window time is a test clock.
 */
const T0 = 1_700_000_000_000;
const quiet: LimiterLogger = { warn: () => undefined, info: () => undefined };
const { prefix, open } = redisTestKeys<RedisRateLimiter>();
let n = 0;

function limiter(clock: { t: number }, sub: string, url = REDIS_URL, coolDownMs = 20): RedisRateLimiter {
  // The outages here are connections cut, not stalls: a command timeout measured in this process,
  // which a busy machine can hold for a moment, only has to be long enough not to fire meanwhile.
  const l = new RedisRateLimiter({ url, keyPrefix: prefix + sub, now: () => clock.t, logger: quiet, coolDownMs, heartbeatMs: 50, commandTimeoutMs: 5_000 });
  open.push(l);
  return l;
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 250 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

const clientOf = (l: RedisRateLimiter) => (l as unknown as { redis: Redis }).redis;

/**
 * Waits until `l` decides through Redis again, which it does only once what it owed after the
 * reconnect (its check-in, the outage's admissions, a raise) has been applied there: every admission
 * waits for that hand-over first. Asked with a scope of its own, so no window the test reads moves.
 * An admission decided locally (the connection not ready, the cool-down) leaves it degraded.
 */
async function handedOver(l: RedisRateLimiter): Promise<void> {
  const probe: LimitScope[] = [{ id: `key:probe${++n}`, quota: { rpm: 1_000 } }];
  for (let i = 0; i < 250; i++) {
    await l.admit('video', probe, 0);
    if (!l.isDegraded) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the instance never decided through Redis again');
}

describe('RedisRateLimiter after an outage', () => {
  it('a Redis that came back without its data is given the minute as this instance knew it: no second quota', async () => {
    const sub = `restart${++n}:`;
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const viaRelay = limiter(clock, sub, relay.url);
    const s: LimitScope[] = [{ id: 'key:restarted', quota: { rpm: 5 } }];
    try {
      await until('the relayed instance to connect', () => viaRelay.connected);
      await new Promise((r) => setTimeout(r, 150)); // a few heartbeats: the instance knows Redis
      for (let i = 0; i < 3; i++) expect((await viaRelay.admit('video', s, 0)).allowed).toBe(true);

      await relay.stop();
      clock.t += 5_000;
      // Alone, it continues the minute: 3 used, 2 left.
      const local = [];
      for (let i = 0; i < 3; i++) local.push((await viaRelay.admit('video', s, 0)).allowed);
      expect(local).toEqual([true, true, false]);

      // Redis restarts empty (as one without persistence does).
      await dropPrefix(prefix + sub);
      await relay.start();
      await until('the relayed instance to reconnect', () => viaRelay.connected);
      await handedOver(viaRelay);
      clock.t += 5_000;

      // The 5 admitted in this minute (3 before the outage, 2 during it) count in Redis.
      const direct = limiter(clock, sub);
      await until('the direct instance to connect', () => direct.connected);
      const after = await direct.admit('video', s, 0);
      expect(after.allowed).toBe(false);
      expect(after.headers['x-ratelimit-remaining-requests']).toBe('0');
      expect((await viaRelay.admit('video', s, 0)).allowed).toBe(false);
      // They leave the window when they would have: the first 3 a minute after their admission.
      clock.t = T0 + 60_000;
      const later = await direct.admit('video', s, 0);
      expect(later.allowed).toBe(true);
      expect(later.headers['x-ratelimit-remaining-requests']).toBe('2');
    } finally {
      await relay.stop();
    }
  });

  it('a Redis that came back empty is known as such even when the counter climbed past what this instance saw', async () => {
    // Redis restarted a few seconds after an earlier restart: the heartbeat counter this instance
    // last read is small, and the other instances' check-ins on the new, empty Redis have already
    // counted past it by the time this one reconnects.
    const sub = `climbed${++n}:`;
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const viaRelay = limiter(clock, sub, relay.url);
    const s: LimitScope[] = [{ id: 'key:climbed', quota: { rpm: 5 } }];
    const raw = new Redis(REDIS_URL);
    try {
      await until('the relayed instance to connect', () => viaRelay.connected);
      await new Promise((r) => setTimeout(r, 150));
      for (let i = 0; i < 3; i++) expect((await viaRelay.admit('video', s, 0)).allowed).toBe(true);

      await relay.stop();
      await until('the relayed instance to notice', () => !viaRelay.connected);
      const seen = Number(await raw.get(`${prefix}${sub}rl:generation`));
      expect(seen).toBeGreaterThan(0);
      await dropPrefix(prefix + sub);
      await raw.set(`${prefix}${sub}rl:generation`, seen + 10);
      await relay.start();
      await until('the relayed instance to reconnect', () => viaRelay.connected);
      await handedOver(viaRelay);

      // The 3 admitted before the restart still count: 2 left in the minute, not 5.
      const direct = limiter(clock, sub);
      await until('the direct instance to connect', () => direct.connected);
      const got = [];
      for (let i = 0; i < 3; i++) got.push((await direct.admit('video', s, 0)).allowed);
      expect(got).toEqual([true, true, false]);
    } finally {
      raw.disconnect();
      await relay.stop();
    }
  });

  it('a Redis that kept its data is not raised to this instance\'s view of it (which lags behind the shared window)', async () => {
    const sub = `kept${++n}:`;
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const viaRelay = limiter(clock, sub, relay.url);
    const direct = limiter(clock, sub);
    const s: LimitScope[] = [{ id: 'key:kept', quota: { rpm: 5 } }];
    try {
      await until('both instances to connect', () => viaRelay.connected && direct.connected);
      await new Promise((r) => setTimeout(r, 150));
      for (let i = 0; i < 3; i++) expect((await direct.admit('video', s, 0)).allowed).toBe(true);
      clock.t = T0 + 50_000;
      // The relayed instance learns of the other's 3 only now: its local view holds 4 at 50 s.
      expect((await viaRelay.admit('video', s, 0)).headers['x-ratelimit-remaining-requests']).toBe('1');
      clock.t = T0 + 61_000; // the other's 3 left the shared window

      await relay.stop();
      await until('the relayed instance to notice', () => !viaRelay.connected);
      await relay.start();
      await until('the relayed instance to reconnect', () => viaRelay.connected);
      await handedOver(viaRelay);

      const got = [];
      for (let i = 0; i < 5; i++) got.push((await direct.admit('video', s, 0)).allowed);
      expect(got).toEqual([true, true, true, true, false]);
    } finally {
      await relay.stop();
    }
  });

  it('a give-back right after the reconnect waits for the outage\'s admissions to be handed over', async () => {
    const sub = `giveback${++n}:`;
    const relay = new RedisRelay();
    await relay.start();
    const clock = { t: T0 };
    const viaRelay = limiter(clock, sub, relay.url, 0);
    const s: LimitScope[] = [{ id: 'key:given-back', quota: { rpm: 2 } }];
    try {
      await until('the relayed instance to connect', () => viaRelay.connected);
      await relay.stop();
      await until('the relayed instance to notice', () => !viaRelay.connected);
      const a = await viaRelay.admit('video', s, 0); // admitted alone, not yet known to Redis
      expect(a.allowed).toBe(true);

      // Refused after its admission just as Redis answers again: given back at once.
      let gaveBack: Promise<unknown> | undefined;
      clientOf(viaRelay).once('ready', () => {
        gaveBack = viaRelay.release('video', s, 0, a.second);
      });
      await relay.start();
      await until('the give-back', () => gaveBack !== undefined);
      await gaveBack;
      await handedOver(viaRelay);

      // Nothing is counted: the admission was handed over, then given back.
      const direct = limiter(clock, sub);
      await until('the direct instance to connect', () => direct.connected);
      const got = [];
      for (let i = 0; i < 3; i++) got.push((await direct.admit('video', s, 0)).allowed);
      expect(got).toEqual([true, true, false]);
    } finally {
      await relay.stop();
    }
  });
});
