import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KEY_LIST_MAX_LIMIT } from '../../src/admin/service.js';
import { main } from '../../src/main.js';
import { openStore } from '../../src/store/index.js';

let dir: string;
let out = '';
let err = '';

/** Runs the CLI in-process with GATEWAY_CONFIG pointing at a temp SQLite database. */
async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  out = '';
  err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((c) => ((out += String(c)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((c) => ((err += String(c)), true));
  try {
    const code = await main(argv);
    return { code, out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gw-cli-'));
  writeFileSync(join(dir, 'gateway.yaml'), `database: sqlite:${join(dir, 'gw.db')}\ndata_dir: ${dir}\n`);
  process.env.GATEWAY_CONFIG = join(dir, 'gateway.yaml');
});
afterAll(() => {
  delete process.env.GATEWAY_CONFIG;
  rmSync(dir, { recursive: true, force: true });
});

describe('gateway CLI', () => {
  it('manages accounts: create, list, show, topup, ledger', async () => {
    expect((await run('accounts', 'create', 'acme', '--balance', '12.5')).code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ name: 'acme', balance: '12.500000' });
    await run('accounts', 'topup', 'acme', '7.5');
    expect(JSON.parse(out).balance_micros).toBe(20_000_000);
    await run('accounts', 'show', 'acme');
    expect(JSON.parse(out).balance).toBe('20.000000');
    await run('accounts', 'list');
    expect(JSON.parse(out).map((a: { name: string }) => a.name)).toEqual(['acme']);
    await run('accounts', 'ledger', 'acme');
    expect(JSON.parse(out).map((e: { kind: string }) => e.kind)).toEqual(['credit', 'credit']);
  });

  it('prints a new key alone on the last line, lists and revokes it', async () => {
    const r = await run('keys', 'create', '--account', 'acme', '--models', 'sora-*,text-embedding-*', '--actions', 'video,embeddings', '--expires', '30d');
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    const key = lines[lines.length - 1]!;
    expect(key).toMatch(/^sk-gw-[A-Za-z0-9_-]{43}$/);
    const record = JSON.parse(lines.slice(0, -1).join('\n'));
    expect(record).toMatchObject({ models: ['sora-*', 'text-embedding-*'], actions: ['video', 'embeddings'] });
    await run('keys', 'list', '--account', 'acme');
    expect(out).not.toContain(key);
    expect(JSON.parse(out)).toHaveLength(1);
    expect((await run('keys', 'revoke', record.id)).code).toBe(0);
    expect(JSON.parse(out).revoked_at).not.toBeNull();
  });

  it('lists more keys than one page holds: every key once, in creation order, as one JSON array', async () => {
    expect((await run('accounts', 'create', 'bulk')).code).toBe(0);
    const store = await openStore(`sqlite:${join(dir, 'gw.db')}`, { dataDir: dir });
    try {
      await store.driver.run(
        `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ${KEY_LIST_MAX_LIMIT * 2 + 4})
         INSERT INTO api_keys (id, account_id, hash, prefix, name, models, actions, limits, created_at)
         SELECT printf('bulk-%05d', n), (SELECT id FROM accounts WHERE name = 'bulk'), 'bulk-hash-' || n, 'sk-gw-b' || n, NULL, '["*"]', '["video"]', '{}', 1700000000000 + n / 3 FROM seq`,
      );
    } finally {
      await store.close();
    }
    const r = await run('keys', 'list', '--account', 'bulk');
    expect(r.code).toBe(0);
    const listed = JSON.parse(r.out) as Array<{ id: string }>;
    expect(listed.map((k) => k.id)).toEqual(Array.from({ length: KEY_LIST_MAX_LIMIT * 2 + 5 }, (_, n) => `bulk-${String(n).padStart(5, '0')}`));
    // Written a page at a time, yet exactly as the whole array would be printed.
    expect(r.out).toBe(`${JSON.stringify(listed, null, 2)}\n`);
    await run('keys', 'list', '--account', 'acme');
    expect(out).toBe(`${JSON.stringify(JSON.parse(out), null, 2)}\n`);
    await run('accounts', 'create', 'keyless');
    expect((await run('keys', 'list', '--account', 'keyless')).out).toBe('[]\n');
  });

  it('prints help with exit 0 when asked, usage with exit 2 when given nothing', async () => {
    const help = await run('--help');
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/accounts/);
    const none = await run();
    expect(none.code).toBe(2);
    expect(none.out).toMatch(/Usage: gateway/);
  });

  it('exits non-zero with a clear message on bad input, and writes nothing', async () => {
    const bad = await run('accounts', 'topup', 'acme', 'lots');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/amount/);
    expect((await run('accounts', 'show', 'ghost')).code).toBe(4);
    const noAccount = await run('keys', 'create');
    expect(noAccount.code).toBe(2);
    expect(noAccount.err).toMatch(/--account/);
    const unknown = await run('frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown command 'frobnicate'/);
    expect(unknown.err).not.toMatch(/\n\s+at /);
    await run('accounts', 'show', 'acme');
    expect(JSON.parse(out).balance_micros).toBe(20_000_000);
  });
});
