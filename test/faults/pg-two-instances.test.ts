import { createServer, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';
import { upstreamsFor } from '../helpers/video.js';
import { postgresBackend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from '../webhooks/receiver.js';

/**
 * Two gateway processes on one PostgreSQL database, both refreshing the same video jobs (their
 * background refreshers, and clients polling each job through both at once), then one of them
 * killed with -9 while jobs are still running. Sora's jobs finish while both live, wan's after the
 * kill. Every job settles exactly once (one release, one capture for a completed job, none for a
 * failed one), the survivor answers every id, the balance equals the ledger, and each job's event
 * reaches the receiver under one webhook-id. `npm run build` must have run.
 */
const ADMIN = 'two-instances-admin-token-0123456789';
const pg = postgresBackend();
let soraSim: SimServer;
let wanSim: SimServer;
let dir: string;
const gws: GatewayProcess[] = [];
const received: { id: string; body: any }[] = [];
const receiver = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    received.push({ id: String(req.headers['webhook-id']), body: JSON.parse(body) });
    res.writeHead(200).end('ok');
  });
});
let receiverUrl: string;

beforeAll(async () => {
  soraSim = await sora.simulator.start({ taskMs: 1_000 });
  // Long enough that no wan job has finished when every sora job has settled: those settle a
  // second after their create plus however long the refreshers and the polling clients take to
  // see it, which on a busy machine can be a few seconds.
  wanSim = await wan.simulator.start({ taskMs: 5_000 });
  dir = mkdtempSync(join(tmpdir(), 'gw-two-'));
  receiverUrl = `${await listenOnLoopback(receiver)}/hook`;
});
afterAll(async () => {
  for (const g of gws) await killLeftover(g);
  await shutReceiver(receiver);
  await soraSim?.close();
  await wanSim?.close();
  await pg.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('two instances on PostgreSQL refreshing the same jobs, one killed', () => {
  it('every job settles exactly once and its event is delivered', async () => {
    const database = (await pg.fresh()).url;
    const { upstreams, models } = upstreamsFor([
      { module: sora, sim: soraSim },
      { module: wan, sim: wanSim },
    ]);
    const config = (n: number) => ({
      database,
      data_dir: join(dir, `data-${n}`),
      log_level: 'warn',
      admin_token: ADMIN,
      secret: 'two-instances-secret-0123456789abcdef',
      upstreams,
      models,
      video: { poll_interval_ms: 50, refresher_interval_ms: 50, lease_ms: 1_000 },
      webhooks: { allow_private_networks: true, interval_ms: 100, timeout_ms: 1_000, lease_ms: 7_000, retry_base_ms: 500 },
    });
    gws.push(await startGatewayProcess(dir, config(1), 'a.json'), await startGatewayProcess(dir, config(2), 'b.json'));
    const [a, b] = gws as [GatewayProcess, GatewayProcess];
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await call(a, 'POST', '/admin/accounts', { headers, body: { name: 'shared', balance: '100' } })).status).toBe(201);
    const key = (await call(a, 'POST', '/admin/keys', { headers, body: { account: 'shared' } })).json.key as string;
    expect((await call(b, 'POST', '/admin/webhooks', { headers, body: { account: 'shared', url: receiverUrl } })).status).toBe(201);

    const jobs: { id: string; model: string; fail: boolean }[] = [];
    for (const model of ['sora-2', 'wan2.6-t2v']) {
      for (let i = 0; i < 6; i++) {
        const fail = i % 3 === 2;
        const via = i % 2 === 0 ? a : b;
        const r = await call(via, 'POST', '/v1/videos/generations', { key, body: { model, prompt: fail ? 'x [fail]' : 'x' } });
        expect(r.status, r.text).toBe(200);
        jobs.push({ id: r.json.id, model, fail });
      }
    }
    // Clients poll every job through both instances at once while the refreshers run on both.
    const final = new Map<string, any>();
    let stop = false;
    const pollers = [a, b].map(async (g) => {
      while (!stop) {
        await Promise.all(
          jobs.map(async (j) => {
            const r = await call(g, 'GET', `/v1/videos/${j.id}`, { key }).catch(() => undefined);
            if (r?.status === 200 && r.json.status !== 'processing') final.set(j.id, r.json);
          }),
        ).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    await waitFor(() => jobs.filter((j) => j.model === 'sora-2').every((j) => final.has(j.id)), 'the sora jobs to settle with both alive', 10_000, 50);
    expect(jobs.filter((j) => j.model !== 'sora-2').every((j) => !final.has(j.id))).toBe(true);
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    await waitFor(() => final.size === jobs.length, 'every job to settle on the survivor', 15_000, 50);
    // An event the killed instance had claimed and not yet sent waits for its lease (7 s) to run out.
    await waitFor(() => new Set(received.map((e) => e.body.data.id)).size === jobs.length, 'every job event', 20_000, 50);
    // More passes on the survivor: nothing settles twice.
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await Promise.all(pollers);

    const store = await openStore(database, { dataDir: dir });
    try {
      const acct = (await store.getAccountByName('shared'))!;
      const entries = await store.listLedger(acct.id, { limit: 1000 });
      expect(entries.reduce((s, e) => s + e.delta, 0)).toBe(acct.balance);
      let spent = 0;
      for (const j of jobs) {
        const job = final.get(j.id)!;
        expect(job.status, `${j.model} fail=${j.fail}`).toBe(j.fail ? 'failed' : 'completed');
        const ref = String((await store.driver.query('SELECT id FROM jobs WHERE public_id = ?', [j.id]))[0]!.id);
        const mine = entries.filter((e) => e.ref === ref);
        expect(mine.map((e) => e.kind).sort(), `${j.model} fail=${j.fail}`).toEqual(j.fail ? ['hold', 'release'] : ['capture', 'hold', 'release']);
        const captured = mine.filter((e) => e.kind === 'capture').reduce((s, e) => s - e.delta, 0);
        expect(captured).toBe(Math.round((job.usage.cost as number) * 1e6));
        spent += captured;
        const events = received.filter((e) => e.body.data.id === j.id);
        expect(new Set(events.map((e) => e.id)).size).toBe(1);
        expect(events[0]!.body.type).toBe(j.fail ? 'video.failed' : 'video.completed');
      }
      expect(acct.balance).toBe(100_000_000 - spent);
      // A delivery the killed instance had sent but not yet marked stays pending until its lease
      // (7 s) runs out; the survivor then sends it again under the same webhook-id and marks it.
      const states = async () => (await store.driver.query('SELECT state FROM webhook_outbox')).map((r) => String(r.state));
      await waitFor(async () => (await states()).every((s) => s === 'delivered'), 'every outbox row delivered', 20_000, 100);
      expect((await states()).length).toBe(jobs.length);
    } finally {
      await store.close();
    }
    // The survivor still answers every id, settled as it was.
    for (const j of jobs) expect((await call(b, 'GET', `/v1/videos/${j.id}`, { key })).json.status).toBe(final.get(j.id).status);
  }, 90_000);
});
