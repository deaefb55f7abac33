import { connect } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import { buildServices } from '../../src/services.js';
import type { SqlStore } from '../../src/store/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

let sim: SimServer;
let embed: SimServer;
let gw: TestGateway;
let key: string;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 100 });
  embed = await openai.simulator.start({});
  const video = upstreamsFor([{ module: sora, sim, timeoutMs: 600 }]);
  gw = await startTestGateway({
    upstreams: [
      ...video.upstreams,
      { name: 'oai', vendor: 'openai', base_url: embed.url, api_key: openai.simulator.demo(embed).apiKey, models: ['text-embedding-3-small', 'gpt-4o-mini'] },
    ],
    models: {
      ...video.models,
      'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } },
      'gpt-4o-mini': { capabilities: ['chat'], price: { per_million_input_tokens: 0.15, per_million_output_tokens: 0.6 } },
    },
    server: { body_limit_bytes: 4096, request_timeout_ms: 400 },
  });
  key = (await gw.newKey(10)).key;
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([sim?.close(), embed?.close()]);
});

const video = (k: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  call(gw, 'POST', '/v1/videos/generations', { key: k, body: { model: 'sora-2', prompt: 'x', ...body }, headers });

describe('x-request-id on every answer (spec 7.2 statuses)', () => {
  it('is on every status, a fresh UUID when the client sent none, and the error body is the spec shape only', async () => {
    const seen = new Map<number, string>();
    const note = (r: { status: number; headers: Headers; json: any }) => {
      const id = r.headers.get('x-request-id');
      expect(id, `status ${r.status}`).toMatch(UUID);
      if (r.status >= 400) expect(Object.keys(r.json)).toEqual(['error']);
      seen.set(r.status, id!);
    };
    note(await call(gw, 'GET', '/v1/models', { key }));
    note(await call(gw, 'POST', '/v1/videos/generations', { key, body: '{"model":' }));
    note(await call(gw, 'GET', '/v1/models'));
    note(await video((await gw.newKey(0)).key, { seconds: 4 }));
    note(await video((await gw.newKey(10, { actions: ['models'] })).key));
    note(await call(gw, 'GET', '/no/such/route', { key }));
    note(await video(key, { prompt: 'x'.repeat(10_000) }));
    sim.inject({ kind: 'status', status: 422, json: { error: { message: 'Tools are not supported.', type: 'invalid_request_error', param: 'tools' } } }, 1, /^\/v1\/videos$/);
    note(await video(key));
    const limited = (await gw.newKey(10, { limits: { video: { rpm: 1 } } })).key;
    await video(limited);
    note(await video(limited));
    const spy = vi.spyOn(gw.services.store, 'getAccountByName').mockRejectedValueOnce(new Error('boom'));
    note(await call(gw, 'GET', '/admin/accounts/anyone', { headers: { authorization: `Bearer ${gw.adminToken}` } }));
    spy.mockRestore();
    sim.inject({ kind: 'status', status: 500 }, 1, /^\/v1\/videos$/);
    note(await video(key));
    sim.inject({ kind: 'timeout' }, 1, /^\/v1\/videos$/);
    note(await video(key));
    const created = await video(key);
    sim.inject({ kind: 'latency', ms: 1500 }, 1, /^\/v1\/videos\/[^/]+$/);
    note(await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key }));
    expect([...seen.keys()].sort((a, b) => a - b)).toEqual([200, 400, 401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 504]);
    expect(new Set(seen.values()).size).toBe(seen.size);
  });

  it('503 (no upstream reachable) carries it too', async () => {
    const dead = await startTestGateway({
      upstreams: [{ name: 'gone', vendor: 'sora', base_url: 'http://127.0.0.1:9', api_key: 'k', models: ['sora-2'], timeout_ms: 1000 }],
      models: { 'sora-2': { capabilities: ['video'], price: { per_second: 0.1 } } },
    });
    try {
      const r = await call(dead, 'POST', '/v1/videos/generations', { key: (await dead.newKey(10)).key, body: { model: 'sora-2', prompt: 'x' } });
      expect(r.status).toBe(503);
      expect(r.headers.get('x-request-id')).toMatch(UUID);
    } finally {
      await dead.close();
    }
  });

  it("keeps the client's own sane id and replaces one that is not", async () => {
    const mine = 'client-req_42.a:b';
    expect((await call(gw, 'GET', '/v1/models', { key, headers: { 'x-request-id': mine } })).headers.get('x-request-id')).toBe(mine);
    const err = await call(gw, 'GET', '/v1/models/unknown', { key, headers: { 'x-request-id': mine } });
    expect(err.status).toBe(404);
    expect(err.headers.get('x-request-id')).toBe(mine);
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', 'a,b', '']) {
      const r = await call(gw, 'GET', '/v1/models', { key, headers: { 'x-request-id': bad } });
      expect(r.headers.get('x-request-id'), JSON.stringify(bad)).toMatch(UUID);
    }
  });

  it('is on embeddings and on a streamed chat answer (written by hand after hijacking the reply)', async () => {
    const e = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'hi' }, headers: { 'x-request-id': 'emb-1' } });
    expect(e.status, e.text).toBe(200);
    expect(e.headers.get('x-request-id')).toBe('emb-1');
    const c = await call(gw, 'POST', '/v1/chat/completions', {
      key,
      body: { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      headers: { 'x-request-id': 'chat-1' },
    });
    expect(c.status, c.text).toBe(200);
    expect(c.headers.get('content-type')).toContain('text/event-stream');
    expect(c.headers.get('x-request-id')).toBe('chat-1');
  });

  it('is on the answer to a request the HTTP parser refuses and on a malformed path', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const url = new URL(gw.url);
      const s = connect(Number(url.port), url.hostname, () => s.write('GET /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'));
      let got = '';
      s.on('data', (d) => (got += d.toString())).on('end', () => resolve(got)).on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    expect(raw).toMatch(/\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i);
    const bad = await call(gw, 'GET', '/v1/videos/%E0%A4%A', { key });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-request-id')).toMatch(UUID);
  });
});

describe('the request id travels on', () => {
  it('to OpenAI-protocol upstreams as X-Client-Request-Id, and onto the job it created', async () => {
    sim.reset();
    embed.reset();
    const v = await video(key, {}, { 'x-request-id': 'vid-req-1' });
    expect(v.status, v.text).toBe(200);
    expect(sim.requests.find((q) => q.method === 'POST')?.headers['x-client-request-id']).toBe('vid-req-1');
    const rows = await (gw.services.store as SqlStore).driver.query('SELECT request_id FROM jobs WHERE request_id = ?', ['vid-req-1']);
    expect(rows).toHaveLength(1);
    const e = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'hi' }, headers: { 'x-request-id': 'emb-req-1' } });
    expect(e.status, e.text).toBe(200);
    const c = await call(gw, 'POST', '/v1/chat/completions', {
      key,
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      headers: { 'x-request-id': 'chat-req-1' },
    });
    expect(c.status, c.text).toBe(200);
    const sent = embed.requests.map((q) => q.headers['x-client-request-id']);
    expect(sent).toEqual(['emb-req-1', 'chat-req-1']);
    // A generated id goes the same way.
    const gen = await video(key);
    expect(sim.requests.filter((q) => q.method === 'POST').pop()?.headers['x-client-request-id']).toBe(gen.headers.get('x-request-id'));
  });
});

describe('the access log line', () => {
  it('carries the request id with method, path and status', async () => {
    const lines: any[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
        cb();
      },
    });
    const dataDir = gw.dataDir;
    const cfg = validateConfig(
      { database: 'sqlite::memory:', data_dir: dataDir, admin_token: 'test-admin-token-0123456789', secret: 'test-secret-0123456789abcdef', server: { port: 0 } },
      '(test)',
    );
    const services = await buildServices(cfg, { logger: pino({ level: 'info' }, sink) });
    const app = buildApp(services);
    try {
      const r = await app.inject({ method: 'GET', url: '/v1/models?x=1', headers: { 'x-request-id': 'log-me-7' } });
      expect(r.statusCode).toBe(401);
      const line = lines.find((l) => l.msg === 'request completed');
      expect(line).toMatchObject({ request_id: 'log-me-7', method: 'GET', path: '/v1/models', status: 401 });
      // One refused before routing (a malformed %-escape in the path) gets its line too.
      const bad = await app.inject({ method: 'GET', url: '/v1/videos/%E0%A4%A', headers: { 'x-request-id': 'log-me-8' } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error.code).toBe('malformed_request');
      expect(lines.filter((l) => l.msg === 'request completed' && l.request_id === 'log-me-8')).toEqual([
        expect.objectContaining({ method: 'GET', path: '/v1/videos/%E0%A4%A', status: 400 }),
      ]);
    } finally {
      await app.close();
      await services.close();
    }
  });
});
