import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { ensureDemoKey, startDemo, type Demo } from '../../src/demo.js';
import { MediaUnreachableError } from '../../src/http/media.js';
import { buildServices, type Services } from '../../src/services.js';
import { createLogger } from '../../src/ops/logger.js';
import { SimServer } from '../../src/sim/framework.js';
import { samplePng } from '../../src/sim/media.js';
import { call } from '../helpers/gateway.js';
import { closeListener } from '../../src/http/close-listener.js';

/**
 * The embedded default opens its media fetcher to its own simulators only: any other loopback,
 * private or metadata address is refused, as on any other configuration.
 */
let demo: Demo;
let services: Services;
let app: FastifyInstance;
let dataDir: string;
let gw: { url: string };
let key: string;
/** A loopback service that is not one of the simulators (what an attacker would aim at). */
let bystander: SimServer;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'gw-demo-ssrf-'));
  bystander = await SimServer.start('bystander', () => ({ headers: { 'content-type': 'image/png' }, body: samplePng() }));
  demo = await startDemo({ host: '127.0.0.1', port: 0, dataDir, taskMs: 150 });
  demo.config.log_level = 'silent';
  services = await buildServices(demo.config, { logger: createLogger('silent') });
  app = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  gw = { url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
  key = await ensureDemoKey(services.admin, dataDir);
});
afterAll(async () => {
  if (app) await closeListener(app);
  await services?.close();
  await Promise.all((demo?.sims ?? []).map((s) => s.close()));
  await bystander?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('embedded default media fetching', () => {
  it('allows exactly the simulators, not private networks', () => {
    expect(demo.config.video.media.allow_private_networks).toBe(false);
    expect([...demo.config.video.media.allowed_origins].sort()).toEqual(demo.sims.map((s) => s.url).sort());
  });

  it('refuses loopback, private and metadata addresses other than the simulators', async () => {
    const media = services.video.deps.media;
    const port = new URL(bystander.url).port;
    const targets = [
      `http://127.0.0.1:${port}/frame.png`,
      `http://localhost:${port}/frame.png`,
      `http://[::1]:${port}/frame.png`,
      `http://[::ffff:127.0.0.1]:${port}/frame.png`,
      'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://172.16.0.1/',
      'http://100.64.0.1/',
      'http://0.0.0.0:80/',
    ];
    for (const url of targets) {
      await expect(media.fetch(url, 'frame_images[0].image_url'), url).rejects.toMatchObject({ status: 400, code: 'invalid_media' });
    }
    // A simulator's port on another loopback spelling is not the allowed origin either.
    const simPort = new URL(demo.sims[0]!.url).port;
    await expect(media.fetch(`http://localhost:${simPort}/x.png`, 'p')).rejects.toMatchObject({ status: 400, code: 'invalid_media' });
    expect(bystander.requests).toHaveLength(0);
  });

  it('still reaches its own simulators', async () => {
    const sim = demo.sims[0]!;
    // The embedded default's simulators keep no request log; this test reads one.
    sim.record = true;
    const before = sim.requests.length;
    // The simulator answers 404 for a path it does not serve: the fetch got there, it was not refused.
    await expect(services.video.deps.media.fetch(`${sim.url}/not-an-image.png`, 'p')).rejects.toBeInstanceOf(MediaUnreachableError);
    expect(sim.requests.length).toBe(before + 1);
  });

  it('over the API: a frame image on another loopback port is a 400; the demo still makes videos', async () => {
    const models = (await call(gw, 'GET', '/v1/models', { key })).json.data as { id: string; owned_by: string }[];
    const veoModel = models.find((m) => m.owned_by === 'veo')!.id;
    const port = new URL(bystander.url).port;
    const refused = await call(gw, 'POST', '/v1/videos/generations', {
      key,
      body: { model: veoModel, prompt: 'x', frame_images: [{ image_url: `http://127.0.0.1:${port}/frame.png`, frame_type: 'first_frame' }] },
    });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_media', param: 'frame_images[0].image_url' });
    expect(bystander.requests).toHaveLength(0);
    const ok = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: veoModel, prompt: 'a lighthouse at dusk' } });
    expect(ok.status, ok.text).toBe(200);
  });
});
