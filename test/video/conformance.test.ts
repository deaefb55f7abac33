import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4 } from '../../src/sim/media.js';
import { COMMON_PARAMS } from '../../src/video/passthrough.js';
import { STANDARD_FIELDS } from '../../src/video/standard.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { download, PRICE_PER_SECOND, pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * The same lifecycle, over real HTTP, for every registered video vendor: create -> processing ->
 * completed with the actual seconds billed exactly once -> content bytes and ranges; a failure
 * during generation is a failed job that costs nothing; another vendor's parameter is a 400.
 */
const sims = new Map<string, SimServer>();
let gw: TestGateway;

beforeAll(async () => {
  for (const m of videoModules) sims.set(m.vendor.id, await m.simulator.start({ taskMs: 150 }));
  gw = await startTestGateway(upstreamsFor(videoModules.map((module) => ({ module, sim: sims.get(module.vendor.id)! }))));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([...sims.values()].map((s) => s.close()));
});

const modelOf = (id: string) => videoModules.find((m) => m.vendor.id === id)!.simulator.demo(sims.get(id)!).models[0]!.name;

describe.each(videoModules.map((m) => [m.vendor.id]))('video vendor %s through the gateway', (vendorId) => {
  it('creates, polls to completed, bills the actual seconds once, and serves the bytes', async () => {
    const { key, account } = await gw.newKey(100);
    const before = await gw.balance(account);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendorId), prompt: 'a red fox in the snow' } });
    expect(created.status, created.text).toBe(200);
    expect(created.json).toMatchObject({ object: 'video', status: 'processing', model: modelOf(vendorId) });
    expect(created.json.id).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(await gw.balance(account)).toBeLessThan(before); // the estimate is held

    const done = await pollUntilDone(gw, key, created.json.id);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.seconds).toBeGreaterThan(0);
    expect(typeof done.completed_at).toBe('number');
    expect(done.output_url).toContain(`/v1/videos/${created.json.id}/content`);
    expect(done.vendor_data && typeof done.vendor_data).toBe('object');

    const job = (await gw.services.store.listLedger((await gw.services.store.getAccountByName(account))!.id));
    const capture = job.filter((e) => e.kind === 'capture');
    expect(capture).toHaveLength(1);
    const billable = (await gw.services.store.getJob(gw.services.video.deps.sealer.open(created.json.id)!.j))!.billableSeconds!;
    expect(-capture[0]!.delta).toBe(Math.ceil(PRICE_PER_SECOND * 1e6 * billable));
    expect(before - (await gw.balance(account))).toBe(-capture[0]!.delta);

    const content = await download(`${gw.url}/v1/videos/${created.json.id}/content`, { authorization: `Bearer ${key}` });
    expect(content.status).toBe(200);
    expect(content.headers.get('content-type')).toBe('video/mp4');
    expect(content.bytes.equals(sampleMp4())).toBe(true);

    const ranged = await download(`${gw.url}/v1/videos/${created.json.id}/content`, { authorization: `Bearer ${key}`, range: 'bytes=100-1099' });
    expect(ranged.status).toBe(206);
    expect(ranged.bytes.equals(sampleMp4().subarray(100, 1100))).toBe(true);
    expect(ranged.headers.get('content-range')).toBe(`bytes 100-1099/${sampleMp4().length}`);

    // output_url works with no header at all.
    const viaLink = await download(done.output_url);
    expect(viaLink.status).toBe(200);
    expect(viaLink.bytes.equals(sampleMp4())).toBe(true);
  });

  it('turns a moderation failure during generation into a failed job that costs nothing', async () => {
    const { key, account } = await gw.newKey(100);
    const before = await gw.balance(account);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendorId), prompt: 'something [moderation]' } });
    expect(created.status, created.text).toBe(200);
    const done = await pollUntilDone(gw, key, created.json.id);
    expect(done.status).toBe('failed');
    expect(done.error.code).toBe('content_policy_violation');
    expect(typeof done.error.message).toBe('string');
    expect(await gw.balance(account)).toBe(before);
    const content = await call(gw, 'GET', `/v1/videos/${created.json.id}/content`, { key });
    expect(content.status).toBe(400);
    expect(content.json.error.code).toBe('video_not_ready');
  });

  it('rejects every other vendor’s own parameter with 400 naming it, and accepts the common names', async () => {
    const { key } = await gw.newKey(100);
    const me = videoModules.find((m) => m.vendor.id === vendorId)!.vendor;
    for (const other of videoModules) {
      if (other.vendor.id === vendorId) continue;
      const foreign = [...other.vendor.ownedParams].find((p) => !me.ownedParams.has(p) && !COMMON_PARAMS.has(p) && !STANDARD_FIELDS.has(p));
      expect(foreign, `${other.vendor.id} owns a parameter ${vendorId} does not`).toBeDefined();
      const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendorId), prompt: 'x', [foreign!]: 1 } });
      expect(r.status, `${foreign} -> ${vendorId}`).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param: foreign, code: 'unsupported_parameter' });
    }
    const sim = sims.get(vendorId)!;
    const before = sim.requests.length;
    const ok = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendorId), prompt: 'x', seed: 7, negative_prompt: 'a blurry mess' } });
    expect(ok.status, ok.text).toBe(200);
    // Both common names reached the vendor, wherever its protocol places them.
    const sent = JSON.stringify(sim.requests.slice(before).find((q) => q.method === 'POST')?.json ?? sim.requests.slice(before).map((q) => q.raw.toString()));
    expect(sent).toMatch(/"seed":7|seed[^a-z]+7/);
    expect(sent).toContain('a blurry mess');
    expect((await pollUntilDone(gw, key, ok.json.id)).status).toBe('completed');
  });
});
