import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A key budget's period counts a video in the period its job was created in (docs/spend.md): one
 * created at 23:59 UTC and finished after midnight stays in the first day (or month), so the next
 * period's `/v1/usage` figure and its 402 decisions start without it.
 */
const EMBED_MODEL = 'text-embedding-3-small';
/** Midnight UTC that starts a day and a month. */
const MIDNIGHT = Date.UTC(2026, 0, 1);
let videoSim: SimServer;
let embedSim: SimServer;
let gw: TestGateway;
let clockAt = MIDNIGHT - 60_000;

beforeAll(async () => {
  videoSim = await sora.simulator.start({ taskMs: 50 });
  embedSim = await openai.simulator.start({});
  const v = upstreamsFor([{ module: sora, sim: videoSim }]);
  const d = openai.simulator.demo(embedSim);
  gw = await startTestGateway(
    {
      upstreams: [...v.upstreams, { ...d.options, name: 'oai', vendor: 'openai', base_url: embedSim.url, api_key: d.apiKey, models: [EMBED_MODEL] }],
      // "one two three" is 3 tokens at 0.001 = 0.003; a 4 s video holds and costs 0.4.
      models: { ...v.models, [EMBED_MODEL]: { capabilities: ['embedding'], price: { per_million_input_tokens: 1_000 } } },
      limits: { defaults: { video: { rpm: 10_000 }, embeddings: { rpm: 100_000, tpm: 10_000_000 } } },
    },
    { clock: { now: () => clockAt } },
  );
});
afterAll(async () => {
  await gw?.close();
  await videoSim?.close();
  await embedSim?.close();
});

const video = (key: string) => call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a clip at midnight', seconds: 4 } });
const embed = (key: string) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: EMBED_MODEL, input: 'one two three' } });

describe('a key budget period across midnight UTC', () => {
  for (const period of ['day', 'month'] as const) {
    it(`a video created at 23:59 and finished after midnight counts in its first ${period} only`, async () => {
      clockAt = MIDNIGHT - 2_500;
      const account = `midnight-${randomBytes(4).toString('hex')}`;
      await gw.createAccount(account, { balance: 100 });
      const { key } = await gw.services.admin.createKey({ account, budget: { period, period_limit: '0.6' } as never });

      const created = await video(key);
      expect(created.status, created.text).toBe(200);
      clockAt = MIDNIGHT + 5_000;
      expect((await pollUntilDone(gw, key, created.json.id)).status).toBe('completed');

      expect((await embed(key)).status).toBe(200);
      await gw.services.charges.drain();
      const usage = await call(gw, 'GET', '/v1/usage', { key });
      expect(usage.status).toBe(200);
      expect(usage.json.data.period).toMatchObject({ period, limit: 0.6, usage: 0.003, start: new Date(MIDNIGHT).toISOString() });
      expect(usage.json.data.limit_remaining).toBe(0.597);

      // 0.597 left: a 4 s video (0.4) fits, and then another does not.
      const second = await video(key);
      expect(second.status, second.text).toBe(200);
      const refused = await video(key);
      expect(refused.status).toBe(402);
      expect(refused.json.error).toMatchObject({ type: 'insufficient_quota', code: 'key_budget_exceeded' });

      // The first period still shows the video it was created in.
      clockAt = MIDNIGHT - 1;
      expect((await call(gw, 'GET', '/v1/usage', { key })).json.data.period.usage).toBe(0.4);
    });
  }
});
