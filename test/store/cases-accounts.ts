import { expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { MIGRATIONS, openStore, type SqlStore } from '../../src/store/index.js';
import type { ApiKeyRecord } from '../../src/store/types.js';
import { T0, balanceOf, ledgerSum, makeAccount, uid } from './harness.js';

export interface Ctx {
  store: SqlStore;
  url: string;
}

function keyFor(accountId: string, over: Partial<ApiKeyRecord> = {}): Omit<ApiKeyRecord, 'revokedAt' | 'lastUsedAt'> {
  return {
    id: uid('key'),
    accountId,
    hash: uid('hash'),
    prefix: 'sk-gw-AbCd',
    name: 'ci',
    models: ['wan-*'],
    actions: ['video', 'models'],
    limits: { video: { rpm: 3 } },
    expiresAt: null,
    createdAt: T0,
    ...over,
  };
}

async function gatewayError(p: Promise<unknown>): Promise<GatewayError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(GatewayError);
  return e as GatewayError;
}

export function accountCases(ctx: () => Ctx): void {
  it('creates, reads, lists and updates accounts', async () => {
    const { store } = ctx();
    const a = await store.createAccount({ name: 'acme', balance: 0, upstreams: ['wan-main'], limits: { video: { rpm: 2 } }, now: T0 });
    const b = await store.createAccount({ name: 'beta', balance: 0, upstreams: null, limits: {}, now: T0 + 1 });
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(a).toEqual({ id: a.id, name: 'acme', balance: 0, upstreams: ['wan-main'], limits: { video: { rpm: 2 } }, createdAt: T0 });
    expect(await store.getAccount(a.id)).toEqual(a);
    expect(await store.getAccountByName('beta')).toEqual(b);
    expect(await store.getAccount('nope')).toBeUndefined();
    expect((await store.listAccounts()).map((x) => x.name)).toEqual(['acme', 'beta']);

    const up = await store.updateAccount(a.id, { upstreams: null });
    expect(up).toMatchObject({ upstreams: null, limits: { video: { rpm: 2 } } });
    const lim = await store.updateAccount(a.id, { limits: { embeddings: { tpm: 1000 } } });
    expect(lim).toMatchObject({ upstreams: null, limits: { embeddings: { tpm: 1000 } } });
    expect(await store.updateAccount(a.id, {})).toEqual(lim);
    expect(await store.updateAccount('nope', { upstreams: [] })).toBeUndefined();

    const dup = await gatewayError(store.createAccount({ name: 'acme', balance: 0, upstreams: null, limits: {}, now: T0 }));
    expect(dup.status).toBe(400);
    expect(dup.code).toBe('already_exists');
  });

  it('opening balance and top-ups go through the ledger', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 5_000_000);
    const empty = await makeAccount(store, 0);
    expect(await store.listLedger(empty.id)).toEqual([]);
    const topped = await store.topUp(a.id, 2_500_000, 'invoice 7', T0 + 10);
    expect(topped.balance).toBe(7_500_000);
    const entries = await store.listLedger(a.id);
    expect(entries.map((e) => [e.kind, e.delta, e.note])).toEqual([
      ['credit', 2_500_000, 'invoice 7'],
      ['credit', 5_000_000, 'opening balance'],
    ]);
    expect(await ledgerSum(store, a.id)).toBe(topped.balance);
    expect(await gatewayError(store.topUp('nope', 1, null, T0))).toMatchObject({ status: 404, code: 'account_not_found' });
    expect((await gatewayError(store.topUp(a.id, 0, null, T0))).status).toBe(400);
    expect((await gatewayError(store.topUp(a.id, 1.5, null, T0))).status).toBe(400);
    expect(await balanceOf(store, a.id)).toBe(7_500_000);
  });

  it('keeps integers exact up to MAX_SAFE_INTEGER and JSON byte for byte', async () => {
    const { store } = ctx();
    const big = Number.MAX_SAFE_INTEGER - 1;
    const a = await makeAccount(store, big);
    expect(await balanceOf(store, a.id)).toBe(big);
    expect(await ledgerSum(store, a.id)).toBe(big);
    const limits = { chat: { rpm: 1, tpm: 2 }, embeddings: { rpm: 3 } };
    const upstreams = ['a"b', "c'd", 'nul\u0000', 'ünï 😀'];
    const b = await store.createAccount({ name: 'ünï 😀 ?', balance: 0, upstreams, limits, now: T0 });
    expect(await store.getAccount(b.id)).toEqual({ ...b, name: 'ünï 😀 ?', upstreams, limits });
  });

  it('creates, finds, lists, revokes and touches keys', async () => {
    const { store } = ctx();
    const a = await makeAccount(store);
    const b = await makeAccount(store);
    const k1 = await store.createKey(keyFor(a.id, { createdAt: T0 }));
    const k2 = await store.createKey(keyFor(a.id, { createdAt: T0 + 1, expiresAt: T0 + 999, name: null }));
    const k3 = await store.createKey(keyFor(b.id, { id: '' }));
    expect(k3.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(k1).toMatchObject({ revokedAt: null, lastUsedAt: null, models: ['wan-*'], actions: ['video', 'models'] });
    expect(k2).toMatchObject({ name: null, expiresAt: T0 + 999 });
    expect(await store.findKeyByHash(k1.hash)).toEqual(k1);
    expect(await store.findKeyByHash('missing')).toBeUndefined();
    expect(await store.getKey(k2.id)).toEqual(k2);
    expect((await store.listKeys(a.id, { limit: 10, order: 'asc' })).map((k) => k.id)).toEqual([k1.id, k2.id]);
    expect((await store.listKeys(undefined, { limit: 10, order: 'asc' })).map((k) => k.id).sort()).toEqual([k1.id, k2.id, k3.id].sort());

    expect(await store.revokeKey(k1.id, T0 + 50)).toBe(true);
    expect(await store.revokeKey(k1.id, T0 + 60)).toBe(false);
    expect(await store.revokeKey('missing', T0)).toBe(false);
    expect((await store.findKeyByHash(k1.hash))?.revokedAt).toBe(T0 + 50);

    await store.touchKey(k2.id, T0 + 100);
    await store.touchKey(k2.id, T0 + 90);
    expect((await store.getKey(k2.id))?.lastUsedAt).toBe(T0 + 100);

    expect((await gatewayError(store.createKey(keyFor(a.id, { hash: k1.hash })))).code).toBe('already_exists');
    expect((await gatewayError(store.createKey(keyFor('no-such-account')))).status).toBe(404);
  });

  it('pages keys by (created_at, id) either way, all or one account\'s, and finds them by prefix', async () => {
    const { store } = ctx();
    const a = await makeAccount(store);
    const b = await makeAccount(store);
    // Two keys share each creation time, so the id decides their order.
    const made: ApiKeyRecord[] = [];
    for (let i = 0; i < 6; i++) {
      made.push(await store.createKey(keyFor(i % 3 === 2 ? b.id : a.id, { id: `key-${5 - i}`, createdAt: T0 + Math.floor(i / 2), prefix: `sk-gw-p${i % 2}` })));
    }
    const byTime = [...made].sort((x, y) => x.createdAt - y.createdAt || (x.id < y.id ? -1 : 1)).map((k) => k.id);
    const walk = async (accountId: string | undefined, order: 'asc' | 'desc', limit: number) => {
      const seen: string[] = [];
      let after: { createdAt: number; id: string } | undefined;
      // Bounded: a store that ignored the page would otherwise answer the same keys forever.
      for (let i = 0; i <= made.length; i++) {
        const page = await store.listKeys(accountId, { after, limit, order });
        seen.push(...page.map((k) => k.id));
        if (page.length < limit) break;
        const last = page[page.length - 1]!;
        after = { createdAt: last.createdAt, id: last.id };
      }
      return seen;
    };
    for (const limit of [1, 2, 4]) {
      expect(await walk(undefined, 'asc', limit)).toEqual(byTime);
      expect(await walk(undefined, 'desc', limit)).toEqual([...byTime].reverse());
      expect(await walk(a.id, 'asc', limit)).toEqual(byTime.filter((id) => made.find((k) => k.id === id)!.accountId === a.id));
    }
    expect((await store.keysByPrefix('sk-gw-p1', 10)).map((k) => k.id).sort()).toEqual(made.filter((_, i) => i % 2 === 1).map((k) => k.id).sort());
    expect(await store.keysByPrefix('sk-gw-p1', 2)).toHaveLength(2);
    expect(await store.keysByPrefix('sk-gw-p', 2)).toEqual([]);
  });

  it('lists the ledger newest first, by ref and with a limit', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const other = await makeAccount(store, 1_000);
    expect(await store.charge(a.id, 10, 'req-1', 'embeddings', T0 + 1)).toBe('ok');
    expect(await store.charge(a.id, 20, 'req-2', null, T0 + 2)).toBe('ok');
    expect(await store.charge(other.id, 30, 'req-3', null, T0 + 3)).toBe('ok');
    const all = await store.listLedger(a.id);
    expect(all.map((e) => e.ref)).toEqual(['req-2', 'req-1', `open:${a.id}`]);
    expect(all.every((e) => e.accountId === a.id)).toBe(true);
    expect(all[1]).toMatchObject({ kind: 'charge', delta: -10, note: 'embeddings', createdAt: T0 + 1 });
    expect(all[0].id).toBeGreaterThan(all[1].id);
    expect((await store.listLedger(a.id, { limit: 1 })).map((e) => e.ref)).toEqual(['req-2']);
    expect((await store.listLedger(a.id, { ref: 'req-1' })).map((e) => e.delta)).toEqual([-10]);
    expect(await store.listLedger(a.id, { ref: 'req-3' })).toEqual([]);
  });

  it('charges once per ref, may go negative, and answers canAfford', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 100);
    expect(await store.canAfford(a.id, 100)).toBe(true);
    expect(await store.canAfford(a.id, 101)).toBe(false);
    expect(await store.canAfford('nope', 0)).toBe(false);
    expect(await store.charge(a.id, 70, 'r1', null, T0)).toBe('ok');
    expect(await store.charge(a.id, 70, 'r1', null, T0)).toBe('duplicate');
    expect(await store.charge(a.id, 70, 'r2', null, T0)).toBe('ok');
    expect(await balanceOf(store, a.id)).toBe(-40);
    expect(await store.canAfford(a.id, 0)).toBe(false);

    const results = await Promise.all(Array.from({ length: 12 }, () => store.charge(a.id, 5, 'r3', null, T0)));
    expect(results.filter((r) => r === 'ok')).toHaveLength(1);
    expect(await store.listLedger(a.id, { ref: 'r3' })).toHaveLength(1);
    expect(await balanceOf(store, a.id)).toBe(-45);
    expect(await ledgerSum(store, a.id)).toBe(-45);

    expect((await gatewayError(store.charge('nope', 5, 'r4', null, T0))).status).toBe(404);
    expect((await gatewayError(store.charge(a.id, 0.5, 'r5', null, T0))).status).toBe(400);
    expect((await gatewayError(store.charge(a.id, -5, 'r6', null, T0))).status).toBe(400);
    expect(await balanceOf(store, a.id)).toBe(-45);
  });

  it('charges many in one call: in order, once per ref, one bad item failing alone', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const b = await makeAccount(store, 1_000);
    const item = (accountId: string, amount: number, ref: string) => ({ accountId, amount, ref, note: null, now: T0 });
    expect(await store.chargeMany([item(a.id, 10, 'm1'), item(b.id, 20, 'm2'), item(a.id, 10, 'm1')])).toEqual(['ok', 'ok', 'duplicate']);
    expect(await balanceOf(store, a.id)).toBe(990);
    expect(await balanceOf(store, b.id)).toBe(980);
    const mixed = await store.chargeMany([item(a.id, 5, 'm3'), item('no-such-account', 5, 'm4'), item(b.id, 5, 'm5')]);
    expect(mixed[0]).toBe('ok');
    expect(mixed[1]).toBeInstanceOf(Error);
    expect(mixed[2]).toBe('ok');
    expect(await balanceOf(store, a.id)).toBe(985);
    expect(await ledgerSum(store, a.id)).toBe(985);
    expect(await ledgerSum(store, b.id)).toBe(975);
  });

  it('charges many: an amount the ledger cannot take fails in its own slot, the rest are written', async () => {
    const { store } = ctx();
    const a = await makeAccount(store, 1_000);
    const item = (amount: number, ref: string) => ({ accountId: a.id, amount, ref, note: null, now: T0 });
    const out = await store.chargeMany([item(10, 'v1'), item(1e16, 'v2'), item(Number.NaN, 'v3'), item(-1, 'v4'), item(0.5, 'v5'), item(20, 'v6')]);
    expect(out[0]).toBe('ok');
    for (const r of out.slice(1, 5)) expect((r as GatewayError).status).toBe(400);
    expect(out[5]).toBe('ok');
    expect(await balanceOf(store, a.id)).toBe(970);
    expect(await ledgerSum(store, a.id)).toBe(970);
  });

  it('migrations are recorded once and re-opening keeps the data', async () => {
    const { store, url } = ctx();
    const a = await makeAccount(store, 42);
    await store.migrate();
    const again = await openStore(url, { dataDir: '.' });
    try {
      await again.migrate();
      expect(await again.getAccount(a.id)).toEqual(a);
      const rows = await again.driver.query('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
    } finally {
      await again.close();
    }
    expect(await balanceOf(store, a.id)).toBe(42);
  });
}
