import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { registry } from '../../src/ops/metrics.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * A create that fails over across two upstreams can run longer than `video.stale_submitting_ms`
 * (each upstream's timeout is within it, their sum is not). The refresher then takes the row for
 * one a dead process left behind: it releases the hold and records the job. When the second
 * upstream accepts the task after that, the create must not answer 200 with a job that has no id,
 * reads "processing" and will never be tracked or billed: it answers an error, the hold stays
 * released exactly once, and the vendor's task is in the reconciliation records.
 */
const CREATE = /^\/v1\/videos$/;
let sim: SimServer;
let gw: TestGateway;
let model: string;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 60_000 });
  const d = sora.simulator.demo(sim);
  model = d.models[0]!.name;
  const upstream = (name: string) => ({ ...d.options, name, vendor: 'sora', base_url: sim.url, api_key: d.apiKey, models: d.models.map((m) => m.name), timeout_ms: 400 });
  gw = await startTestGateway(
    {
      upstreams: [upstream('sora-a'), upstream('sora-b')],
      models: Object.fromEntries(d.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
      // Above each upstream's timeout, as docs/configuration.md asks; below the two together.
      video: { refresher_interval_ms: 50, stale_submitting_ms: 600 },
    },
    { poller: true },
  );
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/** The sum of a counter's series for one model (this file's gateway is the process's only one). */
async function counted(name: string, model: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name) as { values?: Array<{ value: number; labels: Record<string, string> }> } | undefined;
  return (m?.values ?? []).filter((v) => v.labels.model === model && Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

describe('a create that outlives video.stale_submitting_ms', () => {
  it('answers an error, not a 200 without an id; the hold is released once and the task recorded', async () => {
    const { key, account } = await gw.newKey(10);
    // The first upstream never answers (its 400 ms timeout moves the create on); the second
    // accepts after 350 ms, when the row is already 750 ms old.
    sim.inject({ kind: 'timeout' }, 1, CREATE);
    sim.inject({ kind: 'latency', ms: 350 }, 1, CREATE);
    const releasedBefore = await counted('gateway_money_released_total', model);
    const rejectedBefore = await counted('gateway_video_settlements_total', model, { outcome: 'rejected' });
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'slow create', seconds: 4 } });
    expect(sim.received('POST', CREATE).length).toBe(2);
    expect(r.status, r.text).not.toBe(200);
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(r.json.error.type).toBe('server_error');

    const store = gw.services.store;
    const acct = (await store.getAccountByName(account))!;
    const entries = (await store.listLedger(acct.id)).filter((e) => e.kind !== 'credit');
    expect(entries.map((e) => e.kind).sort()).toEqual(['hold', 'release']);
    expect(await gw.balance(account)).toBe(10_000_000);
    const jobId = entries[0]!.ref;
    expect((await store.getJob(jobId))!.state).toBe('rejected');
    const notes = (await store.listReconcile(100)).filter((n) => n.jobId === jobId).map((n) => n.reason);
    expect(notes.some((n) => /accepted task/.test(n)), JSON.stringify(notes)).toBe(true);
    expect((await call(gw, 'GET', '/v1/videos', { key })).json.data).toEqual([]);
    // The hold moved once (the refresher's release), so the metrics count it once: 0.4 released, one rejection.
    expect((await counted('gateway_money_released_total', model)) - releasedBefore).toBeCloseTo(0.4, 6);
    expect((await counted('gateway_video_settlements_total', model, { outcome: 'rejected' })) - rejectedBefore).toBe(1);
  }, 20_000);

  it('when every upstream then fails, the release is still counted once (the refresher made it)', async () => {
    const { key, account } = await gw.newKey(10);
    const releasedBefore = await counted('gateway_money_released_total', model);
    const rejectedBefore = await counted('gateway_video_settlements_total', model, { outcome: 'rejected' });
    // Both upstreams time out (400 ms each): the create fails after the refresher released the row at 600 ms.
    sim.inject({ kind: 'timeout' }, 2, CREATE);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'slow failure', seconds: 4 } });
    expect(r.status, r.text).toBeGreaterThanOrEqual(500);
    const acct = (await gw.services.store.getAccountByName(account))!;
    const entries = (await gw.services.store.listLedger(acct.id)).filter((e) => e.kind !== 'credit');
    expect(entries.map((e) => e.kind).sort()).toEqual(['hold', 'release']);
    expect(await gw.balance(account)).toBe(10_000_000);
    expect((await counted('gateway_money_released_total', model)) - releasedBefore).toBeCloseTo(0.4, 6);
    expect((await counted('gateway_video_settlements_total', model, { outcome: 'rejected' })) - rejectedBefore).toBe(1);
  }, 20_000);
});
