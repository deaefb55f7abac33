import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { call } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/process.js';
import { PG_URL } from '../store/harness.js';

/**
 * Embeddings charges on PostgreSQL are acknowledged before their batch is written. These tests hold
 * the account's row lock from outside, so the batch cannot land, and show: the answers still leave;
 * SIGTERM writes every acknowledged charge before the process exits; kill -9 loses at most those
 * charges, and only in the client's favour (the balance and the ledger still agree exactly).
 */
const ADMIN = 'pg-charges-admin-token-0123456789';
const N = 6;
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;
const schemas: string[] = [];

beforeAll(async () => {
  sim = await startOpenAISimulator();
  dir = mkdtempSync(join(tmpdir(), 'gw-pg-charges-'));
});
afterEach(async () => {
  if (gw && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
  await gw?.exited;
  gw = undefined;
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await client.end();
});

async function start(): Promise<{ g: GatewayProcess; key: string; account: string; database: string; schema: string }> {
  const schema = `gw_pgcharge_${randomBytes(4).toString('hex')}`;
  schemas.push(schema);
  const database = `${PG_URL}?schema=${schema}`;
  const g = await startGatewayProcess(dir, {
    database,
    data_dir: join(dir, schema),
    admin_token: ADMIN,
    secret: 'pg-charges-secret-0123456789abcdef',
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: ['text-embedding-3-small'] }],
    models: { 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 1000 } } },
  }, `${schema}.json`);
  gw = g;
  const headers = { authorization: `Bearer ${ADMIN}` };
  const account = `acct-${schema}`;
  expect((await call(g, 'POST', '/admin/accounts', { headers, body: { name: account, balance: '10' } })).status).toBe(201);
  const k = await call(g, 'POST', '/admin/keys', { headers, body: { account } });
  expect(k.status, k.text).toBe(201);
  return { g, key: k.json.key, account, database, schema };
}

const embed = (g: GatewayProcess, key: string, i: number) =>
  call(g, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: `charge me later ${i}` } });

/** Takes the account row's lock in a transaction of its own: the gateway's charge batch waits for it. */
async function lockAccount(schema: string, account: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  await client.connect();
  await client.query('BEGIN');
  const rows = await client.query('SELECT id FROM accounts WHERE name = $1 FOR UPDATE', [account]);
  expect(rows.rowCount).toBe(1);
  return {
    async release() {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

async function ledgerOf(database: string, account: string) {
  const store = await openStore(database, { dataDir: dir });
  try {
    const acct = (await store.getAccountByName(account))!;
    const entries = await store.listLedger(acct.id, { limit: 1000 });
    return { balance: acct.balance, charges: entries.filter((e) => e.kind === 'charge'), sum: entries.reduce((s, e) => s + e.delta, 0) };
  } finally {
    await store.close();
  }
}

describe('embeddings charges acknowledged before their write, on PostgreSQL', () => {
  it('answers while the write is blocked; SIGTERM writes every acknowledged charge before exiting 0', async () => {
    const { g, key, account, database, schema } = await start();
    const before = (await ledgerOf(database, account)).balance;
    const lock = await lockAccount(schema, account);
    let released = false;
    try {
      const answers = await Promise.all(Array.from({ length: N }, (_, i) => embed(g, key, i)));
      expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200));
      // Answered, not yet in the ledger: the batch waits for the lock.
      expect((await ledgerOf(database, account)).charges).toHaveLength(0);
      g.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      expect(g.child.exitCode).toBeNull(); // the drain waits for the write
      await lock.release();
      released = true;
      expect(await g.exited).toBe(0);
      const after = await ledgerOf(database, account);
      expect(after.charges).toHaveLength(N);
      const billed = answers.reduce((s, a) => s + Math.round(Number(a.json.usage.cost) * 1_000_000), 0);
      expect(before - after.balance).toBe(billed);
      expect(after.balance).toBe(after.sum);
    } finally {
      if (!released) await lock.release();
    }
  }, 60_000);

  it('kill -9 before the write loses only acknowledged charges, never money: the balance equals the ledger', async () => {
    const { g, key, account, database, schema } = await start();
    const before = (await ledgerOf(database, account)).balance;
    const lock = await lockAccount(schema, account);
    try {
      const answers = await Promise.all(Array.from({ length: N }, (_, i) => embed(g, key, i)));
      expect(answers.map((a) => a.status)).toEqual(Array(N).fill(200));
      g.child.kill('SIGKILL');
      await g.exited;
    } finally {
      await lock.release();
    }
    // The blocked statement either died with its connection or ran once the lock went: either way
    // it landed whole or not at all, so no balance moved without its ledger entry.
    const after = await ledgerOf(database, account);
    expect(after.charges.length).toBeLessThanOrEqual(N);
    expect(after.balance).toBe(after.sum);
    expect(after.balance).toBeLessThanOrEqual(before);
    expect(before - after.balance).toBe(after.charges.reduce((s, e) => s - e.delta, 0));
  }, 60_000);
});
