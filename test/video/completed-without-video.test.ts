import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A vendor that reports the job finished but hands back no video, each in its own wire shape (the
 * simulators' "[no-video]" marker): Azure `succeeded` with an empty `generations`, Seedance
 * `succeeded` without `content.video_url`, Wan `SUCCEEDED` without `output.video_url`, Veo `done`
 * with no videos and nothing filtered, fal a result whose `video` is null. Over real HTTP the job
 * must fail as `generation_failed` (spec 7.3), its hold released exactly once and nothing captured,
 * and its content must answer 400 `video_not_ready`. Sora has no such shape (a video object never
 * carries the video), so it is not among them.
 */
const VENDORS = ['azure-sora', 'seedance', 'wan', 'veo', 'fal'];
const modules = videoModules.filter((m) => VENDORS.includes(m.vendor.id));
const sims = new Map<string, SimServer>();
let gw: TestGateway;

beforeAll(async () => {
  for (const m of modules) sims.set(m.vendor.id, await m.simulator.start({ taskMs: 100 }));
  gw = await startTestGateway(upstreamsFor(modules.map((module) => ({ module, sim: sims.get(module.vendor.id)! }))));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([...sims.values()].map((s) => s.close()));
});

const modelOf = (id: string) => modules.find((m) => m.vendor.id === id)!.simulator.demo(sims.get(id)!).models[0]!.name;

describe.each(VENDORS.map((v) => [v]))('%s finishing without a video', (vendorId) => {
  it('fails the job at no charge: hold released once, nothing captured, content not ready', async () => {
    expect(modules.map((m) => m.vendor.id)).toContain(vendorId);
    const { key, account } = await gw.newKey(100);
    const before = await gw.balance(account);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendorId), prompt: 'a red fox [no-video]' } });
    expect(created.status, created.text).toBe(200);
    expect(await gw.balance(account)).toBeLessThan(before); // held

    const done = await pollUntilDone(gw, key, created.json.id, 4_000);
    expect(done.status, JSON.stringify(done)).toBe('failed');
    expect(done.error).toEqual({ code: 'generation_failed', message: expect.any(String) });
    expect(done.error.message).not.toBe('');
    expect(done.output_url ?? null).toBeNull();

    expect(await gw.balance(account)).toBe(before);
    const accountId = (await gw.services.store.getAccountByName(account))!.id;
    const ledger = await gw.services.store.listLedger(accountId);
    const holds = ledger.filter((e) => e.kind === 'hold');
    const releases = ledger.filter((e) => e.kind === 'release');
    expect(holds).toHaveLength(1);
    expect(releases).toHaveLength(1);
    expect(releases[0]!.delta).toBe(-holds[0]!.delta);
    expect(ledger.filter((e) => e.kind === 'capture')).toHaveLength(0);

    // A later poll settles nothing again.
    const again = await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
    expect(again.json.status).toBe('failed');
    expect((await gw.services.store.listLedger(accountId)).length).toBe(ledger.length);

    const content = await call(gw, 'GET', `/v1/videos/${created.json.id}/content`, { key });
    expect(content.status).toBe(400);
    expect(content.json.error).toMatchObject({ type: 'invalid_request_error', code: 'video_not_ready' });
  });
});
