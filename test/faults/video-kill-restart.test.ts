import { createServer, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';
import { PRICE_PER_SECOND, upstreamsFor } from '../helpers/video.js';
import { postgresBackend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from '../webhooks/receiver.js';

/**
 * kill -9 of the gateway while video jobs of every vendor are processing (some bound to succeed, some
 * to fail), then a restart on the same database, SQLite and PostgreSQL, with every price changed.
 * Every job settles once, at the price of its create: a
 * completed job's hold is released and its cost captured once, a failed one's released and nothing
 * captured; the ids the clients hold keep working; the balance equals the ledger; each settled job's
 * webhook event arrives (at least once, one webhook-id per job). And when the vendors have forgotten
 * the tasks meanwhile (expired, or lost: each simulator restarted), every job fails `expired` at no
 * charge instead of staying processing. `npm run build` must have run.
 */
const ADMIN = 'video-kill-admin-token-0123456789';
const pg = postgresBackend();
let sims: SimServer[] = [];
let gw: GatewayProcess | undefined;
let dir: string;
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

/**
 * How long each simulated task runs. The jobs must all still be processing when the first process
 * is killed, after a dozen creates one by one, half a second and a read of each: about a second and
 * a half on a quiet machine, three or more on a busy one.
 */
const TASK_MS = 6_000;

beforeAll(async () => {
  sims = await Promise.all(videoModules.map((m) => m.simulator.start({ taskMs: TASK_MS })));
  receiverUrl = `${await listenOnLoopback(receiver)}/hook`;
});
afterEach(async () => {
  await killLeftover(gw);
  gw = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await shutReceiver(receiver);
  await Promise.all(sims.map((s) => s.close()));
  await pg.dispose();
});

/** `pricePerSecond`: the restart changes every model's price; the jobs in flight keep theirs. */
function config(database: string, pricePerSecond = PRICE_PER_SECOND): Record<string, unknown> {
  const { upstreams, models } = upstreamsFor(videoModules.map((m, i) => ({ module: m, sim: sims[i]! })));
  for (const m of Object.values(models) as { price: { per_second: number } }[]) m.price.per_second = pricePerSecond;
  return {
    database,
    data_dir: join(dir, 'data'),
    log_level: 'warn',
    admin_token: ADMIN,
    secret: 'video-kill-secret-0123456789abcdef',
    upstreams,
    models,
    video: { poll_interval_ms: 200, refresher_interval_ms: 200, lease_ms: 1_000 },
    webhooks: { allow_private_networks: true, interval_ms: 100, timeout_ms: 1_000, lease_ms: 7_000, retry_base_ms: 500 },
  };
}

async function ledgerOf(database: string, accountName: string) {
  const store = await openStore(database, { dataDir: dir });
  try {
    const acct = (await store.getAccountByName(accountName))!;
    const entries = await store.listLedger(acct.id, { limit: 1000 });
    return { balance: acct.balance, entries, sum: entries.reduce((s, e) => s + e.delta, 0) };
  } finally {
    await store.close();
  }
}

async function scenario(database: string, opts: { forget?: boolean } = {}): Promise<void> {
  const headers = { authorization: `Bearer ${ADMIN}` };
  gw = await startGatewayProcess(dir, config(database), 'first.json');
  const account = `killed-${Date.now()}`;
  expect((await call(gw, 'POST', '/admin/accounts', { headers, body: { name: account, balance: '100' } })).status).toBe(201);
  const key = (await call(gw, 'POST', '/admin/keys', { headers, body: { account } })).json.key as string;
  expect((await call(gw, 'POST', '/admin/webhooks', { headers, body: { account, url: receiverUrl } })).status).toBe(201);
  const listed = (await call(gw, 'GET', '/v1/models', { key })).json.data as { id: string; owned_by: string }[];
  const jobs: { id: string; vendor: string; fail: boolean }[] = [];
  for (const m of videoModules) {
    const model = listed.find((x) => x.owned_by === m.vendor.id)!.id;
    for (const fail of [false, true]) {
      const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: fail ? 'a storm [fail]' : 'a calm sea' } });
      expect(created.status, `${m.vendor.id}: ${created.text}`).toBe(200);
      jobs.push({ id: created.json.id, vendor: m.vendor.id, fail });
    }
  }
  // Polled at least once by the first process, then killed with every job still processing.
  await new Promise((r) => setTimeout(r, 500));
  for (const j of jobs) expect((await call(gw, 'GET', `/v1/videos/${j.id}`, { key })).json.status).toBe('processing');
  gw.child.kill('SIGKILL');
  expect(await gw.exited).toBe('SIGKILL');
  if (opts.forget) {
    sims = await Promise.all(
      sims.map(async (sim, i) => {
        const port = Number(new URL(sim.url).port);
        await sim.close();
        return videoModules[i]!.simulator.start({ taskMs: TASK_MS, port });
      }),
    );
  }

  gw = await startGatewayProcess(dir, config(database, 10 * PRICE_PER_SECOND), 'second.json');
  const final = new Map<string, any>();
  await waitFor(
    async () => {
      for (const j of jobs) {
        if (final.has(j.id)) continue;
        const r = await call(gw!, 'GET', `/v1/videos/${j.id}`, { key });
        expect(r.status, r.text).toBe(200);
        if (r.json.status !== 'processing') final.set(j.id, r.json);
      }
      return final.size === jobs.length;
    },
    'every job to settle after the restart',
    15_000,
    200,
  );
  await waitFor(() => new Set(received.filter((e) => jobs.some((j) => j.id === e.body.data.id)).map((e) => e.body.data.id)).size === jobs.length, 'every event', 10_000, 100);
  // A few more refresher passes: nothing settles a job a second time.
  await new Promise((r) => setTimeout(r, 600));

  const { balance, entries, sum } = await ledgerOf(database, account);
  expect(sum).toBe(balance);
  let spent = 0;
  const store = await openStore(database, { dataDir: dir });
  try {
    for (const j of jobs) {
      const job = final.get(j.id);
      const fails = j.fail || opts.forget === true;
      expect(job.status, `${j.vendor} ${j.fail}: ${JSON.stringify(job.error)}`).toBe(fails ? 'failed' : 'completed');
      if (opts.forget) expect(job.error.code, j.vendor).toBe('expired');
      const rows = await store.driver.query('SELECT id FROM jobs WHERE public_id = ?', [j.id]);
      const ref = String(rows[0]!.id);
      const kinds = entries.filter((e) => e.ref === ref).map((e) => e.kind).sort();
      expect(kinds, `${j.vendor} fail=${j.fail}`).toEqual(fails ? ['hold', 'release'] : ['capture', 'hold', 'release']);
      const captured = entries.filter((e) => e.ref === ref && e.kind === 'capture').reduce((s, e) => s - e.delta, 0);
      expect(captured / 1e6).toBeCloseTo(fails ? 0 : job.usage.cost, 6);
      // Billed at the price the hold was taken at, not the one the restart brought.
      if (!fails) expect(job.usage.cost, j.vendor).toBeCloseTo(job.seconds * PRICE_PER_SECOND, 6);
      spent += captured;
      const events = received.filter((e) => e.body.data.id === j.id);
      expect(new Set(events.map((e) => e.id)).size, `${j.vendor}: one event per job`).toBe(1);
      expect(events[0]!.body.type).toBe(fails ? 'video.failed' : 'video.completed');
    }
  } finally {
    await store.close();
  }
  expect(balance).toBe(100_000_000 - spent);
}

describe('kill -9 with video jobs processing, then a restart', () => {
  it('SQLite: every job settles exactly once, the ids keep working, events arrive', async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-video-kill-'));
    await scenario(`sqlite:${join(dir, 'gateway.db')}`);
  }, 60_000);

  it('PostgreSQL: the same', async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-video-kill-pg-'));
    await scenario((await pg.fresh()).url);
  }, 60_000);

  // Last: it restarts the simulators.
  it('the vendors forgot the tasks meanwhile: every job fails expired, nothing charged (every vendor)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-video-kill-forgot-'));
    await scenario(`sqlite:${join(dir, 'gateway.db')}`, { forget: true });
  }, 60_000);
});
