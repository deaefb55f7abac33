import OpenAI, { BadRequestError, NotFoundError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { readBody } from '../../src/sim/openai-videos.js';
import { videoModule as azure } from '../../src/video/vendors/azure-sora/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * Characters (videos.createCharacter, videos.getCharacter) through the official SDK against the
 * gateway and the Sora simulator, and the malformed requests the three new form routes must refuse
 * in the spec's error shape. A character's id is the gateway's sealed id: the vendor's id never
 * shows, and no other account can read it.
 */
let gw: TestGateway;
let sims: { sora: SimServer; azure: SimServer };

beforeAll(async () => {
  sims = { sora: await sora.simulator.start({ taskMs: 200 }), azure: await azure.simulator.start({ taskMs: 200 }) };
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim: sims.sora }, { module: azure, sim: sims.azure }]));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
});

const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
const mp4 = () => toFile(sampleMp4(), 'luna.mp4', { type: 'video/mp4' });

describe('characters', () => {
  it('creates a character on the vendor and reads it back under a sealed id that names nothing of the vendor', async () => {
    const { key, account } = await gw.newKey(100);
    const c = client(key);
    const made = await c.videos.createCharacter({ name: 'Luna', video: await mp4() });
    const sent = sims.sora.lastReceived('POST', '/v1/videos/characters')!;
    const body = (await readBody(sent))!;
    expect(body.fields).toEqual({ name: 'Luna' });
    expect(body.files[0]).toMatchObject({ field: 'video', type: 'video/mp4' });
    expect(body.files[0]!.data.equals(sampleMp4())).toBe(true);
    expect(made).toMatchObject({ name: 'Luna' });
    expect(typeof made.created_at).toBe('number');
    expect(made.id).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(made.id).not.toMatch(/char_/);

    const read = await c.videos.getCharacter(made.id!);
    expect(read).toMatchObject({ id: made.id, name: 'Luna', created_at: made.created_at });
    const got = sims.sora.lastReceived('GET', /^\/v1\/videos\/characters\//)!;
    const upstreamId = got.path.split('/').pop()!;
    expect(upstreamId).toMatch(/^char_/);
    expect(JSON.stringify(made)).not.toContain(upstreamId);
    expect(JSON.stringify(read)).not.toContain(upstreamId);
    // Not billed.
    expect(await gw.balance(account)).toBe(100_000_000);
  });

  it("another account's character, a tampered id and a video's id are all 404 character_not_found", async () => {
    const owner = await gw.newKey(100);
    const made = await client(owner.key).videos.createCharacter({ name: 'Luna', video: await mp4() });
    const other = client((await gw.newKey(100)).key);
    const gets = sims.sora.received('GET', /^\/v1\/videos\/characters\//).length;
    const err = await other.videos.getCharacter(made.id!).catch((e) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.error).toMatchObject({ type: 'not_found', code: 'character_not_found' });
    const id = made.id!;
    const tampered = `${id.slice(0, 20)}${id[20] === 'A' ? 'B' : 'A'}${id.slice(21)}`;
    expect((await other.videos.getCharacter(tampered).catch((e) => e)).status).toBe(404);
    // A video's sealed id is no character, and a character's id is no video.
    const video = await client(owner.key).videos.create({ model: 'sora-2', prompt: 'a fox' });
    expect((await client(owner.key).videos.getCharacter(video.id).catch((e) => e)).error).toMatchObject({ code: 'character_not_found' });
    expect((await client(owner.key).videos.retrieve(id).catch((e) => e)).error).toMatchObject({ code: 'video_not_found' });
    // None of them reached the vendor.
    expect(sims.sora.received('GET', /^\/v1\/videos\/characters\//)).toHaveLength(gets);
  });

  it("a key of the same account limited to other models gets the 404 of an absent character, as for the account's videos", async () => {
    const owner = await gw.newKey(100);
    const made = await client(owner.key).videos.createCharacter({ name: 'Luna', video: await mp4() });
    const video = await client(owner.key).videos.create({ model: 'sora-2', prompt: 'a fox' });
    const limited = await gw.createKey(owner.account, { models: ['wan*'] });
    const gets = sims.sora.received('GET', /^\/v1\/videos\/characters\//).length;
    const r = await call(gw, 'GET', `/v1/videos/characters/${made.id}`, { key: limited });
    expect(r.status, r.text).toBe(404);
    expect(r.json.error).toMatchObject({ type: 'not_found', code: 'character_not_found' });
    expect(r.text).not.toContain('sora');
    expect((await call(gw, 'GET', `/v1/videos/${video.id}`, { key: limited })).json.error).toMatchObject({ code: 'video_not_found' });
    // The vendor was not asked.
    expect(sims.sora.received('GET', /^\/v1\/videos\/characters\//)).toHaveLength(gets);
  });

  it('a model whose vendor has no characters is 400 operation_unsupported; a missing name or video is 400', async () => {
    const c = client((await gw.newKey(100)).key);
    const unsupported = await c.videos.createCharacter({ name: 'Luna', video: await mp4(), model: 'sora' } as never).catch((e) => e);
    expect(unsupported).toBeInstanceOf(BadRequestError);
    expect(unsupported.error).toMatchObject({ code: 'operation_unsupported', param: 'model' });
    const noName = await c.videos.createCharacter({ video: await mp4() } as never).catch((e) => e);
    expect(noName.error).toMatchObject({ code: 'missing_required_parameter', param: 'name' });
    const image = await c.videos.createCharacter({ name: 'Luna', video: await toFile(samplePng(), 'luna.png') }).catch((e) => e);
    expect(image.error).toMatchObject({ code: 'unsupported_media_type', param: 'video' });
  });
});

describe('characters and the video rate limit', () => {
  it("a character the vendor refuses gives its admission back, and its answer's headers say so", async () => {
    const { key } = await gw.newKey(100, { limits: { video: { rpm: 5 } } });
    const create = () => {
      const f = new FormData();
      f.append('name', 'Luna');
      f.append('video', new Blob([new Uint8Array(sampleMp4())], { type: 'video/mp4' }), 'luna.mp4');
      return fetch(`${gw.url}/v1/videos/characters`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: f });
    };
    const made = await create();
    expect(made.status).toBe(200);
    expect(made.headers.get('x-ratelimit-remaining-requests')).toBe('4');
    sims.sora.inject({ kind: 'status', status: 400, json: { error: { message: 'No face found.', type: 'invalid_request_error', param: 'video', code: 'invalid_value' } } }, 1, /characters/);
    const refused = await create();
    expect(refused.status).toBe(400);
    expect((await refused.json()).error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected' });
    // The refused request counts no more: its answer shows the window without it.
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('5');
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('4');
    const next = await create();
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining-requests')).toBe('3');
  });
});

describe('a vendor answering a character id no client could use', () => {
  it('an id of 20,000 characters is an unreadable answer (502), not a 200 with an id too long for any URL', async () => {
    const c = client((await gw.newKey(100)).key);
    sims.sora.inject({ kind: 'status', status: 200, json: { id: `char_${'c'.repeat(20_000)}`, name: 'Luna', created_at: 1 } }, 1, /characters/);
    const err = await c.videos.createCharacter({ name: 'Luna', video: await mp4() }).catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
  });
});

describe('reading characters', () => {
  it('every read asks the vendor, so it counts against the video rate limit: past it, 429 and the vendor is not asked', async () => {
    const { key } = await gw.newKey(100, { limits: { video: { rpm: 3 } } });
    const made = await client(key).videos.createCharacter({ name: 'Luna', video: await mp4() });
    const read = () => call(gw, 'GET', `/v1/videos/characters/${made.id}`, { key });
    const asked = () => sims.sora.received('GET', /^\/v1\/videos\/characters\//).length;
    const before = asked();
    for (const remaining of ['1', '0']) {
      const r = await read();
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ id: made.id, name: 'Luna' });
      expect(r.headers.get('x-ratelimit-remaining-requests')).toBe(remaining);
    }
    const over = await read();
    expect(over.status).toBe(429);
    expect(over.json.error).toMatchObject({ type: 'rate_limit_error' });
    expect(over.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(asked()).toBe(before + 2);
  });
});

describe('malformed requests to the form routes', () => {
  const routes = ['/v1/videos/edits', '/v1/videos/extensions', '/v1/videos/characters'];

  it('a form that cannot be read is 400 invalid_body in the spec shape', async () => {
    const { key } = await gw.newKey(100);
    for (const path of routes) {
      const r = await call(gw, 'POST', path, { key, body: '--nope\r\nContent-Disposition: form-data\r\n\r\nx', headers: { 'content-type': 'multipart/form-data; boundary=other' } });
      expect(r.status, `${path}: ${r.text}`).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error' });
      expect(typeof r.json.error.code).toBe('string');
    }
    const noBoundary = await call(gw, 'POST', '/v1/videos/edits', { key, body: 'x', headers: { 'content-type': 'multipart/form-data' } });
    expect(noBoundary.status).toBe(400);
    expect(noBoundary.json.error).toMatchObject({ code: 'invalid_body' });
  });

  it('a file in the wrong field, two files, a file and an id, unknown fields and a JSON body that is no object are 400', async () => {
    const { key, account } = await gw.newKey(100);
    const form = (parts: [string, string | Blob, string?][]) => {
      const f = new FormData();
      for (const [name, value, filename] of parts) typeof value === 'string' ? f.append(name, value) : f.append(name, value, filename);
      return f;
    };
    const video = () => new Blob([new Uint8Array(sampleMp4())], { type: 'video/mp4' });
    const post = async (path: string, body: FormData) => {
      const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body });
      return { status: res.status, json: (await res.json()) as any };
    };
    const cases: [string, FormData, string][] = [
      ['/v1/videos/edits', form([['prompt', 'x'], ['input_reference', video(), 'a.mp4']]), 'input_reference'],
      ['/v1/videos/edits', form([['prompt', 'x'], ['video', video(), 'a.mp4'], ['video', video(), 'b.mp4']]), 'video'],
      ['/v1/videos/edits', form([['prompt', 'x'], ['video[id]', 'abc'], ['video', video(), 'a.mp4']]), 'video'],
      ['/v1/videos/edits', form([['video', video(), 'a.mp4']]), 'prompt'],
      ['/v1/videos/extensions', form([['prompt', 'x'], ['video', video(), 'a.mp4']]), 'seconds'],
      ['/v1/videos/extensions', form([['prompt', 'x'], ['seconds', '4'], ['size', '1280x720'], ['video', video(), 'a.mp4']]), 'size'],
      ['/v1/videos/characters', form([['name', 'x'.repeat(81)], ['video', video(), 'a.mp4']]), 'name'],
      ['/v1/videos/characters', form([['name', 'Ann\r\nX-Injected: 1'], ['video', video(), 'a.mp4']]), 'name'],
      ['/v1/videos/characters', form([['name', 'Ann\u0000'], ['video', video(), 'a.mp4']]), 'name'],
      ['/v1/videos/characters', form([['name', 'Ann\u2028Bob'], ['video', video(), 'a.mp4']]), 'name'],
    ];
    for (const [path, body, param] of cases) {
      const r = await post(path, body);
      expect(r.status, `${path} ${param}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json.error.type).toBe('invalid_request_error');
      expect(r.json.error.param, `${path}: ${JSON.stringify(r.json)}`).toBe(param);
    }
    for (const path of routes) {
      const r = await call(gw, 'POST', path, { key, body: '["prompt"]' });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ code: 'invalid_body' });
    }
    expect(await gw.balance(account)).toBe(100_000_000);
  });
});
