import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, soraProcessConfig, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';

/**
 * kill -9 of the gateway while a video create waits for the vendor's answer (the job row is
 * 'submitting' and its hold is taken), and the vendor answers into the dead socket: the task exists
 * at the vendor and nobody tracks it. After a restart on the same database the job is released
 * exactly once (never captured, never held for ever), the balance equals the ledger, and the job is
 * recorded for reconciliation with the vendor's bill. `npm run build` must have run.
 */
const ADMIN = 'create-kill-admin-token-0123456789';
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 200 });
  dir = mkdtempSync(join(tmpdir(), 'gw-create-kill-'));
});
afterEach(async () => {
  await killLeftover(gw);
  gw = undefined;
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(): Record<string, unknown> {
  const d = sora.simulator.demo(sim);
  const base = soraProcessConfig(dir, sim, d, {
    admin_token: ADMIN,
    secret: 'create-kill-secret-0123456789abcdef',
    video: { poll_interval_ms: 100, refresher_interval_ms: 100, lease_ms: 1_000, stale_submitting_ms: 1_500 },
  });
  // The vendor's answer must come after the kill: the upstream waits at most 1 s for it.
  return { ...base, upstreams: (base.upstreams as Record<string, unknown>[]).map((u) => ({ ...u, timeout_ms: 1_000 })) };
}

async function ledgerOf(accountName: string) {
  const store = await openStore(`sqlite:${join(dir, 'gateway.db')}`, { dataDir: dir });
  try {
    const acct = (await store.getAccountByName(accountName))!;
    const entries = await store.listLedger(acct.id, { limit: 1000 });
    const jobs = await store.driver.query('SELECT id, state FROM jobs WHERE account_id = ?', [acct.id]);
    const reconcile = await store.listReconcile(100);
    return { balance: acct.balance, entries, sum: entries.reduce((s, e) => s + e.delta, 0), jobs, reconcile };
  } finally {
    await store.close();
  }
}

describe('kill -9 while a video create waits for the vendor', () => {
  it('after the restart the hold is released once, nothing is captured, and the job is recorded for reconciliation', async () => {
    gw = await startGatewayProcess(dir, config(), 'first.json');
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await call(gw, 'POST', '/admin/accounts', { headers, body: { name: 'kill-create', balance: '10' } })).status).toBe(201);
    const key = (await call(gw, 'POST', '/admin/keys', { headers, body: { account: 'kill-create' } })).json.key as string;
    const model = sora.simulator.demo(sim).models[0]!.name;

    let answer!: () => void;
    sim.inject({ kind: 'hold', until: new Promise<void>((r) => (answer = r)) }, 1, /^\/v1\/videos$/);
    const creates = sim.received('POST', /^\/v1\/videos$/).length;
    const pending = call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'killed mid-create', seconds: 4 } }).catch(() => undefined);
    await waitFor(() => sim.received('POST', /^\/v1\/videos$/).length > creates, 'the create to reach the vendor');
    const held = await ledgerOf('kill-create');
    expect(held.jobs.map((j) => j.state)).toEqual(['submitting']);
    expect(held.balance).toBe(10_000_000 - 400_000);

    gw.child.kill('SIGKILL');
    expect(await gw.exited).toBe('SIGKILL');
    // The vendor accepts the task after all; its answer goes to a socket nobody reads.
    answer();
    expect(await pending).toBeUndefined();

    gw = await startGatewayProcess(dir, config(), 'second.json');
    await waitFor(async () => (await ledgerOf('kill-create')).jobs[0]!.state !== 'submitting', 'the interrupted create to be settled', 10_000, 100);
    // A few more refresher passes: nothing settles it a second time.
    await new Promise((r) => setTimeout(r, 500));
    const after = await ledgerOf('kill-create');
    const jobId = String(after.jobs[0]!.id);
    expect(after.jobs[0]!.state).toBe('rejected');
    expect(after.entries.filter((e) => e.ref === jobId).map((e) => e.kind).sort()).toEqual(['hold', 'release']);
    expect(after.balance).toBe(10_000_000);
    expect(after.sum).toBe(after.balance);
    expect(after.reconcile.filter((r) => r.jobId === jobId).length).toBe(1);
    // The client never received an id: the job is not among its videos.
    expect((await call(gw, 'GET', '/v1/videos', { key })).json.data).toEqual([]);
  }, 60_000);
});
