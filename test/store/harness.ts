import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore, type SqlStore } from '../../src/store/index.js';
import type { Account, Store } from '../../src/store/types.js';
import type { NewJob } from '../../src/store/job-types.js';

export const PG_URL = process.env.STORE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const T0 = 1_700_000_000_000;

/** A gateway database URL on PG_URL whose tables live in `schema` (created at start, see dropSchema). */
export function pgSchemaUrl(schema: string): string {
  return `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`;
}

/** Drops a test's PostgreSQL schema and all it holds. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** Opens isolated stores on one backend and removes everything they left behind. */
export interface Backend {
  readonly name: 'sqlite' | 'postgres';
  /** A store on its own empty database (file or schema); returns it and the URL that reaches it. */
  fresh(): Promise<{ store: SqlStore; url: string }>;
  /** Closes every store opened through `fresh` and drops what they created. */
  dispose(): Promise<void>;
}

export function sqliteBackend(): Backend {
  const dir = mkdtempSync(join(tmpdir(), 'store-contract-'));
  const opened: SqlStore[] = [];
  let n = 0;
  return {
    name: 'sqlite',
    async fresh() {
      // A nested path proves that openStore creates missing parent directories.
      const url = `sqlite:${join(dir, `db${++n}`, 'nested', 'gateway.db')}`;
      const store = await openStore(url, { dataDir: dir });
      opened.push(store);
      return { store, url };
    },
    async dispose() {
      for (const s of opened) await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function postgresBackend(): Backend {
  const prefix = `store_test_${randomBytes(5).toString('hex')}`;
  const schemas: string[] = [];
  const opened: SqlStore[] = [];
  return {
    name: 'postgres',
    async fresh() {
      const schema = `${prefix}_${schemas.length + 1}`;
      schemas.push(schema);
      const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`;
      const store = await openStore(url, { dataDir: tmpdir() });
      opened.push(store);
      return { store, url };
    },
    async dispose() {
      for (const s of opened) await s.close();
      if (schemas.length === 0) return;
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

export function uid(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

export function makeAccount(store: Store, balance = 0): Promise<Account> {
  return store.createAccount({ name: uid('acct'), balance, upstreams: null, limits: {}, now: T0 });
}

export function newJob(accountId: string, over: Partial<NewJob> = {}): NewJob {
  return {
    id: uid('job'),
    accountId,
    keyId: 'key-1',
    model: 'wan-2.1',
    vendor: 'wan',
    estSeconds: 5,
    pricePerSecondMicros: 100_000,
    request: { model: 'wan-2.1', prompt: 'a cat on a skateboard', seconds: 5 },
    createdAt: T0,
    deadlineAt: T0 + 600_000,
    ...over,
  };
}

/** A job that holds `hold` and was accepted by an upstream (state processing). */
export async function processingJob(
  store: Store,
  accountId: string,
  hold: number,
  opts: { nextPollAt?: number; deadlineAt?: number } = {},
): Promise<string> {
  const job = newJob(accountId, opts.deadlineAt === undefined ? {} : { deadlineAt: opts.deadlineAt });
  if ((await store.createJobWithHold(job, hold, T0)) !== 'ok') throw new Error('hold refused');
  await store.markJobSubmitted(job.id, {
    upstream: 'wan-main',
    taskId: `task-${job.id}`,
    publicId: `vid_${job.id}`,
    taskMeta: { region: 'intl' },
    nextPollAt: opts.nextPollAt ?? T0 + 5_000,
    now: T0 + 1,
  });
  return job.id;
}

export function completion(costMicros: number, now = T0 + 60_000) {
  return {
    seconds: 5.04,
    billableSeconds: 6,
    costMicros,
    usage: { duration_seconds: 5.04 },
    outputs: [{ url: 'https://cdn.example/v.mp4', content_type: 'video/mp4' }],
    vendorData: { task_status: 'SUCCEEDED' },
    now,
  };
}

export async function ledgerSum(store: Store, accountId: string): Promise<number> {
  const entries = await store.listLedger(accountId, { limit: 10_000 });
  return entries.reduce((sum, e) => sum + e.delta, 0);
}

export async function balanceOf(store: Store, accountId: string): Promise<number> {
  const a = await store.getAccount(accountId);
  if (!a) throw new Error(`no account ${accountId}`);
  return a.balance;
}
