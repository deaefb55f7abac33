import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { hashKey } from '../../src/auth/keys.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 100 });
  const base = upstreamsFor([{ module: sora, sim, name: 'sora-a' }]);
  // sora-a serves sora-2 only, sora-b serves sora-2-pro only.
  gw = await startTestGateway({
    upstreams: [{ ...base.upstreams[0], models: ['sora-2'] }, { ...base.upstreams[0], name: 'sora-b', models: ['sora-2-pro'] }],
    models: { ...base.models, 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/** Sends a request as raw bytes (clients would merge or refuse repeated headers). */
function rawRequest(lines: string[]): Promise<{ status: number; body: any }> {
  const u = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname, () => sock.write(`${lines.join('\r\n')}\r\n\r\n`));
    let text = '';
    sock.on('data', (c) => (text += c));
    sock.on('error', reject);
    sock.on('end', () => {
      const [head, body] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
      resolve({ status: Number(head.split(' ')[1]), body: body ? JSON.parse(body) : null });
    });
  });
}

describe('authentication (spec 5)', () => {
  it('401 authentication_error for missing, malformed, unknown, revoked and expired keys', async () => {
    const { key, account } = await gw.newKey();
    const expired = await gw.createKey(account, { expires: '1s' });
    const cases: (Record<string, string> | undefined)[] = [
      undefined,
      { authorization: '' },
      { authorization: 'Basic abc' },
      { authorization: `Bearer ${key.slice(0, -1)}` },
      { authorization: `Bearer sk-gw-${'A'.repeat(43)}` },
      { authorization: `Bearer  ${key}` },
      { authorization: `bearer${key}` },
    ];
    for (const headers of cases) {
      const r = await call(gw, 'GET', '/v1/models', { headers });
      expect(r.status, JSON.stringify(headers)).toBe(401);
      expect(r.json.error.type).toBe('authentication_error');
    }
    await new Promise((res) => setTimeout(res, 1100));
    expect((await call(gw, 'GET', '/v1/models', { key: expired })).status).toBe(401);
    expect((await call(gw, 'GET', '/v1/models', { key })).status).toBe(200);
  });

  it('rejects two Authorization headers and keys with non-ASCII bytes', async () => {
    const { key } = await gw.newKey();
    const two = await rawRequest(['GET /v1/models HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}`, `Authorization: Bearer ${key}`, 'Connection: close']);
    expect(two.status).toBe(401);
    expect(two.body.error.type).toBe('authentication_error');
    const latin = await rawRequest(['GET /v1/models HTTP/1.1', 'Host: x', `Authorization: Bearer ${key.slice(0, -1)}\u00e9`, 'Connection: close']);
    expect(latin.status).toBe(401);
    const spaced = await rawRequest(['GET /v1/models HTTP/1.1', 'Host: x', `Authorization: Bearer ${key} trailing`, 'Connection: close']);
    expect(spaced.status).toBe(401);
    const broken = await rawRequest(['POST /v1/embeddings HTTP/1.1', 'Host: x', 'Content-Length: abc', 'Connection: close']);
    expect(broken.status).toBe(400);
    expect(broken.body.error).toMatchObject({ type: 'invalid_request_error', code: 'malformed_request' });
  });

  it('a revoked key stops working within seconds', async () => {
    const { key } = await gw.newKey();
    expect((await call(gw, 'GET', '/v1/models', { key })).status).toBe(200);
    const rec = (await gw.services.store.findKeyByHash(hashKey(key)))!;
    await gw.services.admin.revokeKey(rec.id);
    const r = await call(gw, 'GET', '/v1/models', { key });
    expect(r.status).toBe(401);
  });

  it('403 permission_denied for a model outside the key scope or the account upstreams, or a missing action', async () => {
    const { account } = await gw.newKey();
    const scoped = await gw.createKey(account, { models: ['sora-2'] });
    const r = await call(gw, 'POST', '/v1/videos/generations', { key: scoped, body: { model: 'sora-2-pro', prompt: 'x' } });
    expect(r.status).toBe(403);
    expect(r.json.error).toMatchObject({ type: 'permission_denied', param: 'model' });

    const noVideo = await gw.createKey(account, { actions: ['models'] });
    const v = await call(gw, 'POST', '/v1/videos/generations', { key: noVideo, body: { model: 'sora-2', prompt: 'x' } });
    expect(v.status).toBe(403);

    await gw.createAccount('only-a', { balance: 10, upstreams: ['sora-a'] });
    const onlyA = await gw.createKey('only-a');
    const p = await call(gw, 'POST', '/v1/videos/generations', { key: onlyA, body: { model: 'sora-2-pro', prompt: 'x' } });
    expect(p.status).toBe(403);
    expect(sim.received('POST', '/v1/videos')).toHaveLength(0);
  });

  it('404 model_not_found for an unknown model; 400 for a model without the capability', async () => {
    const { key } = await gw.newKey();
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'no-such-model', prompt: 'x' } });
    expect(r.status).toBe(404);
    expect(r.json.error).toEqual({ type: 'not_found', message: expect.any(String), code: 'model_not_found', param: 'model' });
    const e = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'text-embedding-3-small', prompt: 'x' } });
    expect(e.status).toBe(400);
    expect(e.json.error.code).toBe('model_not_supported');
  });
});

describe('GET /v1/models', () => {
  it('lists only what the key and account may use, with capabilities and owner', async () => {
    const { key, account } = await gw.newKey();
    const all = await call(gw, 'GET', '/v1/models', { key });
    expect(all.status).toBe(200);
    expect(all.json.object).toBe('list');
    const ids = all.json.data.map((m: { id: string }) => m.id).sort();
    expect(ids).toEqual(['sora-2', 'sora-2-pro']); // the embedding model has no upstream
    expect(all.json.data[0]).toMatchObject({ object: 'model', owned_by: 'sora', capabilities: ['video'] });

    const scoped = await gw.createKey(account, { models: ['sora-2'] });
    const one = await call(gw, 'GET', '/v1/models', { key: scoped });
    expect(one.json.data.map((m: { id: string }) => m.id)).toEqual(['sora-2']);
    expect((await call(gw, 'GET', '/v1/models/sora-2', { key: scoped })).json.id).toBe('sora-2');
    expect((await call(gw, 'GET', '/v1/models/sora-2-pro', { key: scoped })).status).toBe(403);
    expect((await call(gw, 'GET', '/v1/models/nope', { key: scoped })).status).toBe(404);
  });
});
