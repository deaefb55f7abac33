import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { RedisRateLimiter } from '../../src/limits/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ensureRedis, RedisRelay } from '../limits/redis-helper.js';
import { eventually } from './client.js';

/**
 * What two instances admitted on their own while Redis was away must be in the shared window before
 * Redis decides anything again: otherwise the first requests after the outage are judged against the
 * window as it was before it, and the minute admits the outage's requests on top of its quota. Each
 * instance reaches Redis through its own relay, which the test cuts and brings back.
 */
const EMB = 'text-embedding-3-small';
let sim: SimServer;
let dir: string;
const relays = [new RedisRelay(), new RedisRelay()];
const gws: TestGateway[] = [];
const limiterOf = (gw: TestGateway) => gw.services.limiter as unknown as RedisRateLimiter;

beforeAll(async () => {
  await ensureRedis();
  sim = await startOpenAISimulator();
  dir = mkdtempSync(join(tmpdir(), 'gw-redis-recovery-'));
  for (const relay of relays) {
    await relay.start();
    gws.push(
      await startTestGateway({
        database: `sqlite:${join(dir, 'shared.db')}`,
        limits: { backend: 'redis', redis_url: relay.url },
        upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: [EMB] }],
        models: { [EMB]: { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } } },
      }),
    );
  }
  // Each instance learns from its heartbeat (every 5 s) that there are two: its share in an outage is half a quota.
  expect(await eventually(() => gws.every((gw) => limiterOf(gw).instances === 2), 12_000)).toBe(true);
}, 30_000);

afterAll(async () => {
  for (const relay of relays) await relay.start().catch(() => undefined);
  for (const gw of gws) await gw.close();
  for (const relay of relays) await relay.stop();
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

const embed = (gw: TestGateway, key: string) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: EMB, input: 'counted' } });

async function cut(): Promise<void> {
  for (const relay of relays) await relay.stop();
  expect(await eventually(() => gws.every((gw) => !limiterOf(gw).connected), 10_000)).toBe(true);
}

/** Redis back for both, and past the limiter's cool-down (1 s after its last failure), so the next admission asks it. */
async function restore(): Promise<void> {
  for (const relay of relays) await relay.start();
  expect(await eventually(() => gws.every((gw) => limiterOf(gw).connected), 10_000)).toBe(true);
  await new Promise((r) => setTimeout(r, 1_200));
}

const admitted = (rs: { status: number }[]) => rs.filter((r) => r.status === 200).length;

describe('the minute after a Redis outage', () => {
  it('a burst on the first turn after the outage is judged with what the instance admitted alone', async () => {
    const [a] = gws as [TestGateway];
    const { key } = await a.newKey(10, { limits: { embeddings: { rpm: 12 } } });
    for (let i = 0; i < 2; i++) expect((await embed(a, key)).status).toBe(200);
    await cut();
    // The local window continues the minute (2 used) with half the quota: 4 more fit.
    const during = [];
    for (let i = 0; i < 5; i++) during.push((await embed(a, key)).status);
    expect(during).toEqual([200, 200, 200, 200, 429]);
    await restore();
    // Six of twelve spent: six more, however they arrive.
    const burst = await Promise.all(Array.from({ length: 8 }, () => embed(a, key)));
    expect(admitted(burst)).toBe(6);
  }, 30_000);

  it('what an instance that serves nothing after the outage admitted during it is counted too', async () => {
    const [a, b] = gws as [TestGateway, TestGateway];
    const { key } = await a.newKey(10, { limits: { embeddings: { rpm: 12 } } });
    await cut();
    for (let i = 0; i < 2; i++) expect((await embed(a, key)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await embed(b, key)).status).toBe(200);
    await restore();
    // b gets no request after the outage; its five still count against the minute.
    expect(await eventually(() => !limiterOf(b).fallback.hasUnshared, 10_000)).toBe(true);
    const burst = await Promise.all(Array.from({ length: 8 }, () => embed(a, key)));
    expect(admitted(burst)).toBe(5);
  }, 30_000);
});
