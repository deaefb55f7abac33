import { createServer, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, soraProcessConfig, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';
import { listenOnLoopback, shutReceiver } from '../webhooks/receiver.js';

/**
 * kill -9 with a video job processing, then a restart whose config no longer has the upstream the
 * job is pinned to: renamed (a task id belongs to the vendor account behind that upstream, so no
 * other upstream may poll it), or its name given to an upstream of another vendor (whose answers to
 * the first vendor's requests, a 404, would read as the task having expired). The job stays
 * processing (the upstream may come back) until its deadline, then fails `timeout` at no charge,
 * its hold released once, its `video.failed` event sent, and the vendor task it leaves behind,
 * which may have finished and billed, recorded for reconciliation. `npm run build` must have run.
 */
const ADMIN = 'upstream-gone-admin-token-0123456789';
const DEADLINE_MS = 4_000;
let sim: SimServer;
let wanSim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;
const events: any[] = [];
const receiver = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    events.push(JSON.parse(body));
    res.writeHead(200).end('ok');
  });
});
let receiverUrl: string;

beforeAll(async () => {
  // The task outlives the test: only the gateway's deadline can end the job.
  sim = await sora.simulator.start({ taskMs: 120_000 });
  wanSim = await wan.simulator.start({ taskMs: 120_000 });
  receiverUrl = `${await listenOnLoopback(receiver)}/hook`;
});
afterEach(async () => {
  await killLeftover(gw);
  gw = undefined;
  rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await shutReceiver(receiver);
  await sim?.close();
  await wanSim?.close();
});

/** The Sora upstream named `upstreamName`; with `wanNamed`, also a wan upstream under that name. */
function config(upstreamName: string, wanNamed?: string): Record<string, unknown> {
  const base = soraProcessConfig(dir, sim, sora.simulator.demo(sim), {
    admin_token: ADMIN,
    secret: 'upstream-gone-secret-0123456789abcdef',
    video: { poll_interval_ms: 100, refresher_interval_ms: 100, lease_ms: 1_000, deadline_ms: DEADLINE_MS },
    webhooks: { allow_private_networks: true, interval_ms: 100, timeout_ms: 1_000, lease_ms: 7_000, retry_base_ms: 500 },
  });
  const upstreams: Record<string, unknown>[] = (base.upstreams as Record<string, unknown>[]).map((u) => ({ ...u, name: upstreamName }));
  if (!wanNamed) return { ...base, upstreams };
  const w = wan.simulator.demo(wanSim);
  upstreams.push({ ...w.options, name: wanNamed, vendor: 'wan', base_url: wanSim.url, api_key: w.apiKey, models: w.models.map((m) => m.name) });
  const models = { ...(base.models as object), ...Object.fromEntries(w.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])) };
  return { ...base, upstreams, models };
}

async function inStore() {
  const store = await openStore(`sqlite:${join(dir, 'gateway.db')}`, { dataDir: dir });
  try {
    const acct = (await store.getAccountByName('pinned'))!;
    const entries = await store.listLedger(acct.id, { limit: 100 });
    return { balance: acct.balance, entries, sum: entries.reduce((s, e) => s + e.delta, 0), reconcile: await store.listReconcile(100) };
  } finally {
    await store.close();
  }
}

describe('restart without the upstream a processing job is pinned to', () => {
  it.each([
    ['renamed', () => config('sora-b')],
    ['its name given to another vendor', () => config('sora-b', 'sora-a')],
  ])('%s: the job waits for it until the deadline, then fails timeout at no charge and is recorded for reconciliation', async (_, second) => {
    dir = mkdtempSync(join(tmpdir(), 'gw-upstream-gone-'));
    events.length = 0;
    const wanPolls = wanSim.received('GET', /./).length;
    gw = await startGatewayProcess(dir, config('sora-a'), 'first.json');
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await call(gw, 'POST', '/admin/accounts', { headers, body: { name: 'pinned', balance: '10' } })).status).toBe(201);
    const key = (await call(gw, 'POST', '/admin/keys', { headers, body: { account: 'pinned' } })).json.key as string;
    expect((await call(gw, 'POST', '/admin/webhooks', { headers, body: { account: 'pinned', url: receiverUrl } })).status).toBe(201);
    const model = sora.simulator.demo(sim).models[0]!.name;
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a long take', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    const createdAt = Date.now();
    gw.child.kill('SIGKILL');
    expect(await gw.exited).toBe('SIGKILL');

    gw = await startGatewayProcess(dir, second(), 'second.json');
    const early = await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
    expect(early.status, early.text).toBe(200);
    if (Date.now() - createdAt < DEADLINE_MS - 500) expect(early.json.status).toBe('processing');
    let job: any;
    await waitFor(
      async () => (job = (await call(gw!, 'GET', `/v1/videos/${created.json.id}`, { key })).json).status !== 'processing',
      'the deadline to end the job',
      DEADLINE_MS + 5_000,
      100,
    );
    expect(job).toMatchObject({ status: 'failed', error: { code: 'timeout' }, usage: { cost: 0 } });
    await waitFor(() => events.length > 0, 'the video.failed event', 5_000, 50);
    expect(events[0]).toMatchObject({ type: 'video.failed', data: { id: created.json.id } });
    // More refresher passes: nothing settles or records it again.
    await new Promise((r) => setTimeout(r, 500));

    const after = await inStore();
    expect(after.entries.filter((e) => e.kind !== 'credit').map((e) => e.kind).sort()).toEqual(['hold', 'release']);
    expect(after.balance).toBe(10_000_000);
    expect(after.sum).toBe(after.balance);
    expect(after.reconcile.length, JSON.stringify(after.reconcile)).toBe(1);
    expect(after.reconcile[0]).toMatchObject({ upstream: 'sora-a' });
    expect(after.reconcile[0]!.reason).toMatch(/deadline/);
    expect(after.reconcile[0]!.reason).toMatch(/no longer configured/);
    // Nothing asked the other vendor about a task it never had.
    expect(wanSim.received('GET', /./).length).toBe(wanPolls);
  }, 30_000);
});
