import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * Video holds and embeddings on one account and one instance: the balance check of either must
 * see the money the other has taken or promised. Embeddings admit on a cached balance and an
 * in-process in-flight sum; video holds are a conditional UPDATE in the store.
 */
const EMBED_MODEL = 'text-embedding-3-small';
let videoSim: SimServer;
let embedSim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  videoSim = await sora.simulator.start({ taskMs: 100 });
  embedSim = await openai.simulator.start({});
  const v = upstreamsFor([{ module: sora, sim: videoSim }]);
  const d = openai.simulator.demo(embedSim);
  gw = await startTestGateway({
    upstreams: [...v.upstreams, { ...d.options, name: 'oai', vendor: 'openai', base_url: embedSim.url, api_key: d.apiKey, models: [EMBED_MODEL] }],
    // One token ("one") costs 0.3; an 8 s video holds 0.8.
    models: { ...v.models, [EMBED_MODEL]: { capabilities: ['embedding'], price: { per_million_input_tokens: 300_000 } } },
    limits: { defaults: { video: { rpm: 10_000 }, embeddings: { rpm: 100_000, tpm: 10_000_000 } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await videoSim?.close();
  await embedSim?.close();
});

const video = (key: string) => call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a held clip', seconds: 8 } });
const embed = (key: string) => call(gw, 'POST', '/v1/embeddings', { key, body: { model: EMBED_MODEL, input: 'one' } });

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 500) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('video holds and embeddings on one balance', () => {
  it('embeddings right after a video hold cannot spend the money it holds', async () => {
    const { key, account } = await gw.newKey(1.2);
    // The first request reads the balance (1.2) into the instance's cached view; 0.9 is left.
    expect((await embed(key)).status).toBe(200);
    const created = await video(key);
    expect(created.status).toBe(200);
    // 0.1 is left: none of these fits.
    const after = await Promise.all([embed(key), embed(key), embed(key)]);
    expect(after.map((r) => r.status)).toEqual([402, 402, 402]);
    await pollUntilDone(gw, key, created.json.id);
    expect(await gw.balance(account)).toBe(1_200_000 - 300_000 - 800_000);
  });

  it('a video hold cannot take the money embeddings in flight were promised', async () => {
    const { key, account } = await gw.newKey(1);
    let let_go!: () => void;
    const held = new Promise<void>((r) => (let_go = r));
    embedSim.inject({ kind: 'hold', until: held }, 3, /embeddings/);
    const before = embedSim.received('POST', /embeddings/).length;
    const inFlight = Promise.all([embed(key), embed(key), embed(key)]);
    await until(() => embedSim.received('POST', /embeddings/).length === before + 3);
    // 0.9 of the 1.0 is promised to the three requests at the vendor: 0.8 more does not fit.
    const refused = await video(key);
    let_go();
    expect((await inFlight).map((r) => r.status)).toEqual([200, 200, 200]);
    expect(refused.status).toBe(402);
    expect(refused.json.error.type).toBe('insufficient_quota');
    expect(await gw.balance(account)).toBe(100_000);
  });

  it('money a failed video held is spendable again at once, not a second later', async () => {
    const { key, account } = await gw.newKey(1.2);
    expect((await embed(key)).status).toBe(200);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a held clip [fail]', seconds: 8 } });
    expect(created.status).toBe(200);
    // 0.1 is left while the job runs, as the instance's cached balance says.
    expect((await embed(key)).status).toBe(402);
    const started = performance.now();
    expect((await pollUntilDone(gw, key, created.json.id)).status).toBe('failed');
    // The hold came back: the cached figure (read less than a second ago) must know it.
    const again = await embed(key);
    const elapsed = performance.now() - started;
    expect(again.status, `${again.text} (${elapsed.toFixed(0)} ms after the job settled)`).toBe(200);
    expect(await gw.balance(account)).toBe(1_200_000 - 300_000 - 300_000);
  });

  it('video creates side by side on one instance still hold all the balance covers', async () => {
    const { key, account } = await gw.newKey(1.6);
    const results = await Promise.all([video(key), video(key), video(key)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 402]);
    expect(await gw.balance(account)).toBe(0);
  });
});
