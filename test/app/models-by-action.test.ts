import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import type { KeyAction } from '../../src/store/types.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * GET /v1/models lists exactly what the key may use: a model whose every capability belongs to an
 * endpoint the key's `actions` leave out is not listed, and GET /v1/models/{id} refuses it with 403
 * as the endpoint itself would.
 */
let oa: SimServer;
let video: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  oa = await startOpenAISimulator();
  video = await sora.simulator.start({ taskMs: 100 });
  const base = upstreamsFor([{ module: sora, sim: video, name: 'sora-a' }]);
  gw = await startTestGateway({
    upstreams: [
      { ...base.upstreams[0], models: ['sora-2'] },
      { name: 'oa', vendor: 'openai', base_url: oa.url, api_key: oa.settings.apiKey, models: ['gpt-4o-mini', 'text-embedding-3-small'] },
    ],
    models: {
      'sora-2': base.models['sora-2'],
      'gpt-4o-mini': { capabilities: ['chat'], price: { per_million_input_tokens: 0.15, per_million_output_tokens: 0.6 } },
      'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } },
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await oa?.close();
  await video?.close();
});

async function listed(actions: KeyAction[]): Promise<{ key: string; ids: string[] }> {
  const { account } = await gw.newKey(10);
  const key = await gw.createKey(account, { actions });
  const r = await call(gw, 'GET', '/v1/models', { key });
  expect(r.status, r.text).toBe(200);
  return { key, ids: r.json.data.map((m: { id: string }) => m.id).sort() };
}

describe('GET /v1/models and the key\'s actions', () => {
  it('lists the models of the endpoints the key may call, and only those', async () => {
    expect((await listed(['models'])).ids).toEqual([]);
    expect((await listed(['models', 'embeddings'])).ids).toEqual(['text-embedding-3-small']);
    expect((await listed(['models', 'chat'])).ids).toEqual(['gpt-4o-mini']);
    expect((await listed(['models', 'video'])).ids).toEqual(['sora-2']);
    expect((await listed(['models', 'video', 'embeddings', 'chat'])).ids).toEqual(['gpt-4o-mini', 'sora-2', 'text-embedding-3-small']);
  });

  it('answers 403 for one model the key may not use, as its endpoint does', async () => {
    const { key } = await listed(['models', 'embeddings']);
    const one = await call(gw, 'GET', '/v1/models/sora-2', { key });
    expect(one.status).toBe(403);
    expect(one.json.error).toMatchObject({ type: 'permission_denied', param: 'model' });
    const create = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'x' } });
    expect(create.status).toBe(403);
    expect((await call(gw, 'GET', '/v1/models/text-embedding-3-small', { key })).status).toBe(200);
  });
});

describe('POST /v1/videos and a key without the video action', () => {
  it('is refused with 403 before its body is read, whatever the body holds', async () => {
    const { key } = await listed(['models', 'embeddings']);
    const form = new FormData();
    form.append('prompt', 'x');
    form.append('other_file', new Blob([Buffer.alloc(64 * 1024)]), 'a.png');
    const bodies: [string, RequestInit][] = [
      ['a JSON array', { body: '[]', headers: { 'content-type': 'application/json' } }],
      ['a form with a stray file', { body: form }],
      ['a valid create', { body: JSON.stringify({ model: 'sora-2', prompt: 'x' }), headers: { 'content-type': 'application/json' } }],
    ];
    for (const [what, init] of bodies) {
      const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${key}` } });
      const json = (await res.json()) as { error: { type: string } };
      expect(res.status, what).toBe(403);
      expect(json.error.type, what).toBe('permission_denied');
    }
  });
});
