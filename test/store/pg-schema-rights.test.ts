import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { PG_URL } from './harness.js';

/**
 * `?schema=` with a role whose rights are on that schema alone: the schema exists and is migrated
 * (made by its owner), and the role may not create schemas in the database. The gateway used to run
 * CREATE SCHEMA IF NOT EXISTS on every start, which PostgreSQL checks against the database's CREATE
 * right even when the schema exists ("permission denied for database"): such a role could not start.
 */
const tag = randomBytes(4).toString('hex');
const schema = `schema_rights_${tag}`;
const missing = `schema_rights_missing_${tag}`;
const role = `gw_schema_rights_${tag}`;

function urlAs(user: string, onSchema: string): string {
  const u = new URL(PG_URL);
  u.username = user;
  u.password = '';
  u.searchParams.set('schema', onSchema);
  return u.toString();
}

async function asAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

afterAll(async () => {
  await asAdmin(async (c) => {
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.query(`DROP SCHEMA IF EXISTS "${missing}" CASCADE`);
    await c.query(`DROP OWNED BY "${role}"`).catch(() => {});
    await c.query(`DROP ROLE IF EXISTS "${role}"`);
  });
});

describe('PostgreSQL ?schema= with rights on the schema only', () => {
  it('starts on an existing, migrated schema without CREATE on the database; a missing schema still needs it', async () => {
    // The owner creates and migrates the schema.
    await (await openStore(urlAs(new URL(PG_URL).username || 'postgres', schema), { dataDir: tmpdir() })).close();
    await asAdmin(async (c) => {
      await c.query(`CREATE ROLE "${role}" LOGIN`);
      await c.query(`GRANT USAGE, CREATE ON SCHEMA "${schema}" TO "${role}"`);
      await c.query(`GRANT ALL ON ALL TABLES IN SCHEMA "${schema}" TO "${role}"`);
      await c.query(`GRANT ALL ON ALL SEQUENCES IN SCHEMA "${schema}" TO "${role}"`);
      const db = (await c.query('SELECT current_database() AS d')).rows[0].d as string;
      const can = await c.query('SELECT has_database_privilege($1, $2, $3) AS can', [role, db, 'CREATE']);
      expect(can.rows[0].can, 'the role must not have CREATE on the database').toBe(false);
    });

    const store = await openStore(urlAs(role, schema), { dataDir: tmpdir() });
    try {
      const a = await store.createAccount({ name: `rights-${tag}`, balance: 5_000_000, upstreams: null, limits: {}, now: 1 });
      expect((await store.getAccount(a.id))?.balance).toBe(5_000_000);
    } finally {
      await store.close();
    }

    // Making a schema is still the database's CREATE right: refused, with PostgreSQL's own reason.
    await expect(openStore(urlAs(role, missing), { dataDir: tmpdir() })).rejects.toThrow(/permission denied for database/);
  }, 30_000);
});
