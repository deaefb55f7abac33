import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { ensureRedis, REDIS_URL } from './redis-helper.js';

/**
 * A request refused after its admission gives the admission back (limits/refusal.ts), and its own
 * answer says so: the x-ratelimit-* headers of that very 402 or 400 describe the windows after the
 * give-back, not the admission that was undone. Exact values, on fresh windows (each test has its
 * own account, limited below the key's defaults so the account is the tightest scope), on the
 * in-process limiter and on Redis.
 */
const EMB = 'text-embedding-3-small';
const CHAT = 'gpt-4o-mini';
let oa: SimServer;
let video: SimServer;

beforeAll(async () => {
  await ensureRedis();
  oa = await startOpenAISimulator();
  video = await sora.simulator.start({ taskMs: 50 });
});
afterAll(async () => {
  await oa?.close();
  await video?.close();
});

function rate(h: Headers) {
  return {
    limitRequests: h.get('x-ratelimit-limit-requests'),
    remainingRequests: h.get('x-ratelimit-remaining-requests'),
    resetRequests: h.get('x-ratelimit-reset-requests'),
    limitTokens: h.get('x-ratelimit-limit-tokens'),
    remainingTokens: h.get('x-ratelimit-remaining-tokens'),
    resetTokens: h.get('x-ratelimit-reset-tokens'),
  };
}

for (const backend of ['memory', 'redis'] as const) {
  describe(`x-ratelimit-* headers of a refused answer after a give-back (${backend} limiter)`, () => {
    let gw: TestGateway;
    beforeAll(async () => {
      const videoUps = upstreamsFor([{ module: sora, sim: video }]);
      gw = await startTestGateway({
        limits: backend === 'redis' ? { backend, redis_url: REDIS_URL } : { backend },
        upstreams: [{ name: 'oa', vendor: 'openai', base_url: oa.url, api_key: oa.settings.apiKey, models: [CHAT, EMB] }, ...videoUps.upstreams],
        models: {
          [CHAT]: { capabilities: ['chat'], price: { per_million_input_tokens: 0.15, per_million_output_tokens: 0.6 } },
          [EMB]: { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } },
          ...videoUps.models,
        },
      });
    });
    afterAll(async () => gw?.close());

    it('chat: a 402 for the balance shows the request and its tokens given back', async () => {
      const { key } = await gw.newKey(0, { limits: { chat: { rpm: 3, tpm: 50_000 } } });
      const body = { model: CHAT, messages: [{ role: 'user', content: 'hi' }] };
      for (let i = 0; i < 2; i++) {
        const r = await call(gw, 'POST', '/v1/chat/completions', { key, body });
        expect(r.status, r.text).toBe(402);
        expect(rate(r.headers)).toEqual({
          limitRequests: '3',
          remainingRequests: '3',
          resetRequests: '0s',
          limitTokens: '50000',
          remainingTokens: '50000',
          resetTokens: '0s',
        });
      }
    });

    it('embeddings: an upstream 400 shows the give-back, also behind a request that counts', async () => {
      const { key } = await gw.newKey(10, { limits: { embeddings: { rpm: 3, tpm: 50_000 } } });
      const embed = () => call(gw, 'POST', '/v1/embeddings', { key, body: { model: EMB, input: 'hello' } });
      oa.inject({ kind: 'status', status: 400, json: { error: { message: 'input is bad', type: 'invalid_request_error' } } }, 1, /embeddings/);
      const refused = await embed();
      expect(refused.status, refused.text).toBe(400);
      expect(rate(refused.headers)).toEqual({
        limitRequests: '3',
        remainingRequests: '3',
        resetRequests: '0s',
        limitTokens: '50000',
        remainingTokens: '50000',
        resetTokens: '0s',
      });

      const ok = await embed();
      expect(ok.status, ok.text).toBe(200);
      expect(ok.headers.get('x-ratelimit-remaining-requests')).toBe('2');
      oa.inject({ kind: 'status', status: 400, json: { error: { message: 'input is bad', type: 'invalid_request_error' } } }, 1, /embeddings/);
      const again = await embed();
      expect(again.status, again.text).toBe(400);
      // The success still counts (one request); the refused one does not.
      expect(again.headers.get('x-ratelimit-remaining-requests')).toBe('2');
      expect(again.headers.get('x-ratelimit-limit-requests')).toBe('3');
    });

    it('video creates (spec and OpenAI surfaces): a 402 for the balance shows the request given back', async () => {
      const { key } = await gw.newKey(0, { limits: { video: { rpm: 3 } } });
      const body = { model: 'sora-2', prompt: 'a fox', seconds: '4' };
      for (const path of ['/v1/videos/generations', '/v1/videos', '/v1/videos/generations']) {
        const r = await call(gw, 'POST', path, { key, body });
        expect(r.status, `${path}: ${r.text}`).toBe(402);
        expect(rate(r.headers), path).toEqual({
          limitRequests: '3',
          remainingRequests: '3',
          resetRequests: '0s',
          limitTokens: null,
          remainingTokens: null,
          resetTokens: null,
        });
      }
    });
  });
}
