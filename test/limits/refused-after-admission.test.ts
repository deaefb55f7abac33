import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ensureRedis, REDIS_URL } from './redis-helper.js';

/**
 * Embeddings and chat requests refused after the limiter admitted them give the admission back, as
 * refused video creates do: an upstream's 400 (`upstream_rejected`), a balance short of the estimate
 * (402, checked after admission for chat) or a key budget run dry. After any number of them a key
 * limited to 2 requests a minute still makes 2. Failures after the upstreams were put to work (5xx)
 * keep counting. Run on the in-process limiter and on Redis.
 */
const EMB = 'text-embedding-3-small';
const CHAT = 'gpt-4o-mini';
let sim: SimServer;

beforeAll(async () => {
  await ensureRedis();
  sim = await startOpenAISimulator();
});
afterAll(async () => sim?.close());

for (const backend of ['memory', 'redis'] as const) {
  describe(`refusals after admission (${backend} limiter)`, () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway({
        limits: backend === 'redis' ? { backend, redis_url: REDIS_URL } : { backend },
        upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: [CHAT, EMB] }],
        models: {
          [CHAT]: { capabilities: ['chat'], price: { per_million_input_tokens: 0.15, per_million_output_tokens: 0.6 } },
          [EMB]: { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } },
        },
      });
    });
    afterAll(async () => gw?.close());

    const embed = (key: string) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: EMB, input: 'hello' } });
    const chat = (key: string) => call(gw, 'POST', '/v1/chat/completions', { key, body: { model: CHAT, messages: [{ role: 'user', content: 'hi' }] } });

    it('embeddings: upstream 400s spend no RPM quota; upstream 5xx do', async () => {
      const { key } = await gw.newKey(10, { limits: { embeddings: { rpm: 2 } } });
      sim.inject({ kind: 'status', status: 400, json: { error: { message: 'input is bad', type: 'invalid_request_error' } } }, 3, /embeddings/);
      for (let i = 0; i < 3; i++) {
        const r = await embed(key);
        expect(r.status, r.text).toBe(400);
        expect(r.json.error.code).toBe('upstream_rejected');
      }
      expect((await embed(key)).status).toBe(200);
      // A 5xx after the upstream was put to work counts: this one spends the second request.
      sim.inject({ kind: 'status', status: 500 }, 1, /embeddings/);
      expect((await embed(key)).status).toBe(502);
      const limited = await embed(key);
      expect(limited.status, limited.text).toBe(429);
      expect(limited.json.error.type).toBe('rate_limit_error');
    });

    it('chat: 402 for the balance and upstream 400s spend no RPM quota', async () => {
      const poor = await gw.newKey(0, { limits: { chat: { rpm: 2 } } });
      for (let i = 0; i < 3; i++) {
        const r = await chat(poor.key);
        expect(r.status, r.text).toBe(402);
      }
      sim.inject({ kind: 'status', status: 400, json: { error: { message: 'bad messages', type: 'invalid_request_error' } } }, 2, /chat/);
      await gw.services.admin.topUp(poor.account, '10');
      for (let i = 0; i < 2; i++) expect((await chat(poor.key)).status).toBe(400);
      const ok = [await chat(poor.key), await chat(poor.key)];
      expect(ok.map((r) => r.status)).toEqual([200, 200]);
      expect((await chat(poor.key)).status).toBe(429);
    });
  });
}
