import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { ensureDemoKey, startDemo, type Demo } from '../../src/demo.js';
import { buildServices, type Services } from '../../src/services.js';
import { createLogger } from '../../src/ops/logger.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call } from '../helpers/gateway.js';
import { pollUntilDone } from '../helpers/video.js';
import { closeListener } from '../../src/http/close-listener.js';

/** The embedded default, as `npm start` builds it (here on a random port and a temp data dir). */
let demo: Demo;
let services: Services;
let app: FastifyInstance;
let dataDir: string;
let gw: { url: string };
let key: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'gw-demo-'));
  demo = await startDemo({ host: '127.0.0.1', port: 0, dataDir, taskMs: 150 });
  demo.config.log_level = 'silent';
  services = await buildServices(demo.config, { logger: createLogger('silent') });
  app = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  gw = { url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
  (services.video.deps.settings as { publicUrl: string }).publicUrl = gw.url;
  (services.video.deps.settings as { pollIntervalMs: number }).pollIntervalMs = 0;
  key = await ensureDemoKey(services.admin, dataDir);
});
afterAll(async () => {
  // A connection whose last answer was still being written when the close began would otherwise
  // hold it for the keep-alive timeout (see closeListener).
  if (app) await closeListener(app);
  await services?.close();
  await Promise.all((demo?.sims ?? []).map((s) => s.close()));
  rmSync(dataDir, { recursive: true, force: true });
});

describe('embedded default', () => {
  it('creates the demo key once and keeps it across restarts', async () => {
    expect(readFileSync(join(dataDir, 'demo-key'), 'utf8').trim()).toBe(key);
    expect(await ensureDemoKey(services.admin, dataDir)).toBe(key);
    expect((await services.admin.listKeys({ account: 'demo' })).keys.length).toBe(1);
  });

  it('lists a model of every video vendor and the embedding models; 401 without a key', async () => {
    const r = await call(gw, 'GET', '/v1/models', { key });
    expect(r.status).toBe(200);
    const owners = new Set(r.json.data.filter((m: any) => m.capabilities.includes('video')).map((m: any) => m.owned_by));
    for (const m of videoModules) expect(owners.has(m.vendor.id), m.vendor.id).toBe(true);
    expect(r.json.data.some((m: any) => m.capabilities.includes('embedding'))).toBe(true);
    const anon = await call(gw, 'GET', '/v1/models');
    expect(anon.status).toBe(401);
    expect(anon.json.error.type).toBe('authentication_error');
  });

  it('serves a video of every video vendor and an embedding', async () => {
    const models = (await call(gw, 'GET', '/v1/models', { key })).json.data as { id: string; owned_by: string; capabilities: string[] }[];
    for (const m of videoModules) {
      const model = models.find((x) => x.owned_by === m.vendor.id && x.capabilities.includes('video'))!;
      const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: model.id, prompt: 'a lighthouse at dusk' } });
      expect(created.status, `${model.id}: ${created.text}`).toBe(200);
      const done = await pollUntilDone(gw as never, key, created.json.id);
      expect(done.status, `${model.id}: ${JSON.stringify(done.error)}`).toBe('completed');
    }
    const emb = models.find((x) => x.capabilities.includes('embedding'))!;
    const e = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: emb.id, input: 'hello' } });
    expect(e.status, e.text).toBe(200);
    expect(e.json.data[0].embedding.length).toBeGreaterThan(0);
  });

  // Found by the endpoint fuzzer's memory check: the simulators run in the gateway's process and
  // recorded every request they received (the raw body and its parse) for tests to read, so each
  // upstream call of a long-running embedded default stayed in memory for good (about twice its body:
  // 18 MB more after every 9 MB chat, with a full GC in between).
  it('keeps no log of the requests its simulators received', async () => {
    const chat = (await call(gw, 'GET', '/v1/models', { key })).json.data.find((m: { capabilities: string[] }) => m.capabilities.includes('chat'));
    const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: { model: chat.id, messages: [{ role: 'user', content: 'x'.repeat(100_000) }] } });
    expect(r.status, r.text).toBe(200);
    // The earlier tests sent a video to every vendor and an embedding through them.
    expect(demo.sims.map((s) => s.requests.length)).toEqual(demo.sims.map(() => 0));
  });
});
