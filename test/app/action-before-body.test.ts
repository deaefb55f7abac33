import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyAction } from '../../src/store/types.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A key's actions are decided before its request's body is looked at: a key that may not call an
 * endpoint gets 403 whatever it sends (a body of the wrong shape, one that is not JSON, one of the
 * wrong type), and the gateway answers before reading a body it would only throw away.
 */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

async function keyWith(actions: KeyAction[]): Promise<string> {
  const { account } = await gw.newKey(10);
  return gw.createKey(account, { actions });
}

/** Every route that needs a key action, with the action it needs and a method that may carry a body. */
const ROUTES: [method: string, path: string, action: KeyAction][] = [
  ['POST', '/v1/embeddings', 'embeddings'],
  ['POST', '/v1/chat/completions', 'chat'],
  ['POST', '/v1/videos/generations', 'video'],
  ['POST', '/v1/videos', 'video'],
  ['POST', '/v1/videos/video_x/remix', 'video'],
  ['POST', '/v1/videos/edits', 'video'],
  ['POST', '/v1/videos/extensions', 'video'],
  ['POST', '/v1/videos/characters', 'video'],
  ['DELETE', '/v1/videos/video_x', 'video'],
  ['POST', '/v1/files', 'video'],
  ['DELETE', '/v1/files/file-x', 'video'],
];

describe('a key without the action', () => {
  it('gets 403 permission_denied on every route, whatever the body', async () => {
    for (const [method, path, action] of ROUTES) {
      const others = (['video', 'embeddings', 'chat', 'models'] as KeyAction[]).filter((a) => a !== action);
      const key = await keyWith(others);
      for (const [what, body, type] of [
        ['an array', '[]', 'application/json'],
        ['not JSON', '{"model":', 'application/json'],
        ['nested too deep', '['.repeat(100) + ']'.repeat(100), 'application/json'],
        ['text', 'hello', 'text/plain'],
        ['empty', '', 'application/json'],
      ] as const) {
        const r = await call(gw, method, path, { key, body, headers: { 'content-type': type } });
        expect(r.status, `${method} ${path} with ${what}: ${r.text}`).toBe(403);
        expect(r.json.error.type, `${method} ${path} with ${what}`).toBe('permission_denied');
      }
    }
  });

  it('a key with no actions gets 403 from every /v1 route but its own usage, HEAD included', async () => {
    const key = await keyWith([]);
    const routes = gw.app.routeTable.filter((r) => r.url.startsWith('/v1/') && r.url !== '/v1/usage' && r.url !== '/v1/key');
    expect(routes.length).toBeGreaterThan(15);
    expect(routes.some((r) => r.method === 'HEAD')).toBe(true);
    for (const r of routes) {
      const path = r.url.replace(/:(\w+)/g, 'x');
      const res = await call(gw, r.method, path, r.method === 'GET' || r.method === 'HEAD' ? { key } : { key, body: '[]' });
      expect(res.status, `${r.method} ${r.url}: ${res.text}`).toBe(403);
    }
    expect((await call(gw, 'GET', '/v1/usage', { key })).status).toBe(200);
  });

  it('gets its 403 before the body is sent in full (the gateway does not wait to read it)', async () => {
    const key = await keyWith(['video', 'chat', 'models']);
    const port = Number(new URL(gw.url).port);
    const s = net.connect({ port, host: '127.0.0.1' });
    s.on('error', () => undefined);
    try {
      await new Promise((r) => s.once('connect', r));
      const answer = new Promise<string>((resolve) => {
        let got = '';
        s.on('data', (d) => {
          got += d.toString('latin1');
          if (got.includes('\r\n\r\n')) resolve(got);
        });
      });
      // One megabyte declared, ten bytes sent: a gateway that read the body first would wait forever.
      s.write(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"input":`);
      const head = await Promise.race([answer, new Promise<string>((r) => setTimeout(() => r('no answer'), 3_000))]);
      expect(head.split('\r\n')[0]).toBe('HTTP/1.1 403 Forbidden');
    } finally {
      s.destroy();
    }
  });

  it('with the action, the same bodies are judged as before (400s, not 403s)', async () => {
    const key = await keyWith(['embeddings']);
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: '[]' });
    expect(r.status).toBe(400);
    expect(r.json.error.type).toBe('invalid_request_error');
  });
});
