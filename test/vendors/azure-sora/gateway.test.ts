import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../../src/sim/framework.js';
import { videoModule as azure } from '../../../src/video/vendors/azure-sora/index.js';
import { call, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../../helpers/video.js';

/** Vendor E's translation rules through the whole gateway, asserted on what the simulator received. */
let sim: SimServer;
let gw: TestGateway;
let model: string;

beforeAll(async () => {
  sim = await azure.simulator.start({ taskMs: 100 });
  gw = await startTestGateway(upstreamsFor([{ module: azure, sim }]));
  model = azure.simulator.demo(sim).models[0]!.name;
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const lastCreate = () => sim.received('POST', '/openai/v1/video/generations/jobs').at(-1)!;

describe('vendor E (Azure OpenAI Sora) through the gateway', () => {
  it('sends size as integer width/height and seconds as integer n_seconds, never size or seconds', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'waves', size: '1280x720', seconds: 5, custom_knob: { a: [1] } } });
    expect(r.status, r.text).toBe(200);
    const req = lastCreate();
    expect(req.headers['api-key']).toBeDefined();
    expect(req.query.get('api-version')).toBeTruthy();
    expect(req.json).toMatchObject({ width: 1280, height: 720, n_seconds: 5, prompt: 'waves', custom_knob: { a: [1] } });
    expect(req.json).not.toHaveProperty('size');
    expect(req.json).not.toHaveProperty('seconds');
    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.status).toBe('completed');
    expect(done.seconds).toBe(5);
    expect(await gw.balance(account)).toBe(10_000_000 - 500_000);
  });

  it('native n_seconds, width and height win over the standard fields; billing follows what the vendor returned', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'x', seconds: 5, n_seconds: 10, size: '1280x720', width: 480, height: 480 } });
    expect(r.status, r.text).toBe(200);
    expect(lastCreate().json).toMatchObject({ n_seconds: 10, width: 480, height: 480 });
    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.seconds).toBe(10);
    expect(await gw.balance(account)).toBe(10_000_000 - 1_000_000);
  });

  it('takes the common duration as n_seconds', async () => {
    const { key } = await gw.newKey(10);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'x', duration: 6, size: '854x480' } });
    expect(r.status, r.text).toBe(200);
    expect(lastCreate().json.n_seconds).toBe(6);
    expect(lastCreate().json).not.toHaveProperty('duration');
  });
});
