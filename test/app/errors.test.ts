import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

let sim: SimServer;
let gw: TestGateway;
let key: string;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 100 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), server: { body_limit_bytes: 4096, request_timeout_ms: 400 } });
  key = (await gw.newKey()).key;
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

function expectShape(body: any, type: string) {
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.type).toBe(type);
  expect(typeof body.error.message).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|stack/);
}

describe('every error has the spec shape and status (spec 7)', () => {
  it('400 for malformed JSON, an empty body, a non-object body and a wrong content type', async () => {
    for (const body of ['{"model": "sora-2", ', '', '[1,2]', '"text"']) {
      const r = await call(gw, 'POST', '/v1/videos/generations', { key, body });
      expect(r.status, body).toBe(400);
      expectShape(r.json, 'invalid_request_error');
    }
    // Text is no JSON body on any route (Fastify would hand it over as a string): the documented code.
    for (const path of ['/v1/videos/generations', '/v1/embeddings', '/v1/chat/completions']) {
      for (const type of ['text/plain', 'text/plain; charset=utf-8']) {
        const t = await call(gw, 'POST', path, { key, body: '{"model":"x","input":"hi"}', headers: { 'content-type': type } });
        expect(t.status, `${path} ${type}`).toBe(400);
        expectShape(t.json, 'invalid_request_error');
        expect(t.json.error.code, `${path} ${type}`).toBe('unsupported_media_type');
      }
    }
  });

  it('413 for a body over the limit', async () => {
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'x'.repeat(10_000) } });
    expect(r.status).toBe(413);
    expectShape(r.json, 'invalid_request_error');
    expect(r.json.error.code).toBe('body_too_large');
  });

  it('404 for unknown routes and odd paths, authenticated or not', async () => {
    for (const path of ['/v1/nope', '/v2/models', '/v1/videos/a/b/c', '/%2e%2e/%2e%2e/etc/passwd', '/v1/videos/generations/../../admin/accounts']) {
      const r = await call(gw, 'GET', path, { key });
      expect([404, 401]).toContain(r.status);
      expectShape(r.json, r.status === 404 ? 'not_found' : 'authentication_error');
    }
  });

  it('408 request_timeout when a request outlives the configured time', async () => {
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'quick' } });
    expect(created.status).toBe(200);
    sim.inject({ kind: 'latency', ms: 1500 }, 1, /^\/v1\/videos\/[^/]+$/);
    const r = await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
    expect(r.status).toBe(408);
    expectShape(r.json, 'request_timeout');
  });

  it('a slow create is never answered 408 once its job holds money: it finishes and returns the job', async () => {
    const { key: k, account } = await gw.newKey(10);
    sim.inject({ kind: 'latency', ms: 1000 }, 1, /^\/v1\/videos$/);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key: k, body: { model: 'sora-2', prompt: 'slow', seconds: 4 } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.status).toBe('processing');
    expect(await gw.balance(account)).toBe(10_000_000 - 400_000);
  });

  it('405-style method mismatches are answered as 404 in the spec shape', async () => {
    const r = await call(gw, 'DELETE', '/v1/models', { key });
    expect(r.status).toBe(404);
    expectShape(r.json, 'not_found');
  });

  it('422 when the vendor cannot process a well-formed parameter, with its message', async () => {
    sim.inject({ kind: 'status', status: 422, json: { error: { message: 'Tools are not supported for this model.', type: 'invalid_request_error', param: 'tools', code: null } } }, 1, /^\/v1\/videos$/);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'x' } });
    expect(r.status).toBe(422);
    expectShape(r.json, 'invalid_request_error');
    expect(r.json.error.message).toContain('Tools are not supported');
  });

  it('500 server_error for an unexpected failure, with nothing internal in the body', async () => {
    const spy = vi.spyOn(gw.services.store, 'getAccountByName').mockRejectedValueOnce(new Error('connection string postgres://admin:hunter2@db'));
    const r = await call(gw, 'GET', '/admin/accounts/anyone', { headers: { authorization: `Bearer ${gw.adminToken}` } });
    spy.mockRestore();
    expect(r.status).toBe(500);
    expectShape(r.json, 'server_error');
    expect(r.text).not.toContain('hunter2');
  });
});

describe('503 when no upstream can be reached', () => {
  it('answers 503 server_error and holds nothing', async () => {
    const dead = await startTestGateway({
      upstreams: [{ name: 'gone', vendor: 'sora', base_url: 'http://127.0.0.1:9', api_key: 'k', models: ['sora-2'], timeout_ms: 1000 }],
      models: { 'sora-2': { capabilities: ['video'], price: { per_second: 0.1 } } },
    });
    try {
      const { key: k, account } = await dead.newKey(10);
      const r = await call(dead, 'POST', '/v1/videos/generations', { key: k, body: { model: 'sora-2', prompt: 'x' } });
      expect(r.status).toBe(503);
      expectShape(r.json, 'server_error');
      expect(await dead.balance(account)).toBe(10_000_000);
    } finally {
      await dead.close();
    }
  });
});
