import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChargeBatcher, PG_PACE_MS } from '../../src/billing/charges.js';
import { openStore, type SqlStore } from '../../src/store/index.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { balanceOf, ledgerSum, makeAccount, postgresBackend } from '../store/harness.js';
import { tmpdir } from 'node:os';

/**
 * PostgreSQL becomes unreachable while embeddings charges are acknowledged and waiting for their
 * write. Each failed write (whole batch, then item by item) must leave them queued, not given up:
 * once the database is back they are all in the ledger, once each, and the balance matches it.
 */
const backend = postgresBackend();
const relay = new TcpRelay(5432);
let direct: SqlStore;
let relayed: SqlStore;

beforeAll(async () => {
  const fresh = await backend.fresh();
  direct = fresh.store;
  await relay.start();
  const url = new URL(fresh.url);
  url.port = String(relay.port);
  url.hostname = '127.0.0.1';
  relayed = await openStore(url.toString(), { dataDir: tmpdir() });
});
afterAll(async () => {
  await relayed?.close();
  await relay.stop();
  await backend.dispose();
});

describe('PostgreSQL unreachable while charges wait for their write', () => {
  it('keeps every acknowledged charge and writes it once the database is back', async () => {
    const account = await makeAccount(direct, 1_000_000);
    const reported: string[] = [];
    const charges = new ChargeBatcher(relayed, { paceMs: PG_PACE_MS, onError: (_e, ref) => reported.push(ref) });
    // Warm the pool through the relay, then cut it.
    await charges.charge(account.id, 100, 'before', null, Date.now());
    await relay.stop();

    const durables: Promise<void>[] = [];
    for (const ref of ['c1', 'c2', 'c3']) durables.push((await charges.submit(account.id, 100, ref, null, Date.now())).durable);
    for (let waited = 0; reported.length < 2 && waited < 10_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    expect(reported.length).toBeGreaterThanOrEqual(2); // at least one retry failed too
    expect(charges.backlog).toBe(3);

    await relay.start();
    await Promise.all(durables);
    expect(charges.backlog).toBe(0);
    const refs = (await direct.listLedger(account.id, { kind: 'charge' })).map((e) => e.ref).sort();
    expect(refs).toEqual(['before', 'c1', 'c2', 'c3']);
    expect(await balanceOf(direct, account.id)).toBe(1_000_000 - 400);
    expect(await ledgerSum(direct, account.id)).toBe(1_000_000 - 400);
  }, 30_000);
});
