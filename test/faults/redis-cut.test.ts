import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { RedisRateLimiter } from '../../src/limits/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { ensureRedis } from '../limits/redis-helper.js';

/**
 * The gateway's connection to Redis (the shared rate limiter) cut and stalled mid-run, through a relay
 * the test controls: requests go on being served under the local fallback (limits/fallback.ts),
 * never a 500; a quota is still enforced during the outage; and when Redis returns, what was
 * admitted locally is in the shared window, so the limit is not reset by the outage.
 */
const relay = new TcpRelay(6379);
let sim: SimServer;
let gw: TestGateway;
let limiter: RedisRateLimiter;

beforeAll(async () => {
  await ensureRedis();
  await relay.start();
  sim = await startOpenAISimulator();
  gw = await startTestGateway({
    limits: { backend: 'redis', redis_url: `redis://127.0.0.1:${relay.port}` },
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: ['text-embedding-3-small'] }],
    models: { 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } } },
  });
  limiter = gw.services.limiter as unknown as RedisRateLimiter;
  for (let i = 0; i < 100 && !limiter.connected; i++) await new Promise((r) => setTimeout(r, 20));
  expect(limiter.connected).toBe(true);
}, 30_000);

afterAll(async () => {
  await relay.start().catch(() => undefined);
  await gw?.close();
  await relay.stop();
  await sim?.close();
});

const embed = (key: string) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'limited' } });

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  for (let waited = 0; !check() && waited < ms; waited += 20) await new Promise((r) => setTimeout(r, 20));
  expect(check()).toBe(true);
}

describe('Redis cut while the gateway serves', () => {
  it('serves through the cut with the quota still enforced, and the shared window counts the outage once Redis is back', async () => {
    const { key } = await gw.newKey(10, { limits: { embeddings: { rpm: 6 } } });
    expect((await embed(key)).status).toBe(200);
    expect((await embed(key)).status).toBe(200);

    await relay.stop();
    await until(() => !limiter.connected);
    // The local windows continue the minute: 4 more fit the quota of 6, the next is refused.
    const during: number[] = [];
    for (let i = 0; i < 5; i++) during.push((await embed(key)).status);
    expect(during).toEqual([200, 200, 200, 200, 429]);

    await relay.start();
    await until(() => limiter.connected);
    // Past the limiter's cool-down (1 s) Redis is asked again, with what was admitted locally
    // already in the shared window.
    await new Promise((r) => setTimeout(r, 1_200));
    expect((await embed(key)).status, 'the first request after the outage').toBe(429);
    await until(() => !limiter.isDegraded);
    await new Promise((r) => setTimeout(r, 200));
    const after = await embed(key);
    expect(after.status, 'the outage reset the shared window').toBe(429);
    expect(after.json.error.code).toBe('rate_limit_exceeded');
    expect(limiter.isDegraded).toBe(false);
  }, 30_000);

  it('a stalled Redis (no answers, connection up): each request is served within the command timeout, no 500', async () => {
    const { key } = await gw.newKey(10, { limits: { embeddings: { rpm: 1_000 } } });
    await new Promise((r) => setTimeout(r, 1_200));
    expect((await embed(key)).status).toBe(200);
    expect(limiter.isDegraded).toBe(false);
    relay.stall();
    try {
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const r = await embed(key);
        expect(r.status, r.text).toBe(200);
        expect(Date.now() - started).toBeLessThan(3_000);
      }
      expect(limiter.isDegraded).toBe(true);
    } finally {
      relay.resume();
    }
  }, 30_000);
});
