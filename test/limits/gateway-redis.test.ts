import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ensureRedis, REDIS_URL } from './redis-helper.js';

/** Two gateway instances on one database and one Redis share every key's and account's quota. */
let sim: SimServer;
let a: TestGateway;
let b: TestGateway;
let dir: string;

beforeAll(async () => {
  await ensureRedis();
  sim = await startOpenAISimulator();
  dir = mkdtempSync(join(tmpdir(), 'gw-redis-'));
  const cfg = {
    database: `sqlite:${join(dir, 'shared.db')}`,
    limits: { backend: 'redis', redis_url: REDIS_URL },
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: ['gpt-4o-mini', 'text-embedding-3-small'] }],
    models: {
      'gpt-4o-mini': { capabilities: ['chat'], price: { per_million_input_tokens: 0.15, per_million_output_tokens: 0.6 } },
      'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } },
    },
  };
  a = await startTestGateway(cfg);
  b = await startTestGateway(cfg);
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Redis-backed limits across gateway instances', () => {
  it('a key limited to 3 chat requests a minute gets 3 in total, whichever instance it talks to', async () => {
    const account = `multi-${Date.now()}`;
    await a.createAccount(account, { balance: 10 });
    const key = await a.createKey(account, { limits: { chat: { rpm: 3 } } });
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    const statuses: number[] = [];
    for (const gw of [a, b, a, b]) statuses.push((await call(gw, 'POST', '/v1/chat/completions', { key, body })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    // Embeddings keep their own quota on both instances.
    const emb = await call(b, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'x' } });
    expect(emb.status).toBe(200);
  });
});
