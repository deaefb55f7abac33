import { describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/console/sessions.js';
import { call, startTestGateway } from '../helpers/gateway.js';

/**
 * Successful sign-ins are not limited, so the session store itself must keep one credential from
 * pushing out another's sessions: one tenant key signing in 10,000 times used to evict the
 * operator's session from the shared least-recently-used list.
 */
describe('session bounds per credential', () => {
  it("one key signing in over and over replaces only its own sessions, never the operator's or another key's", () => {
    let now = 0;
    const store = new SessionStore(() => now, { ttlMs: 1e9, idleMs: 1e9, maxSessions: 50, maxPerCredential: 10 });
    const operator = store.create('operator', 'admin-token', 'operator');
    const other = store.create('key', 'sk-gw-other', 'other');
    const mine = [];
    for (let i = 0; i < 10_000; i++) {
      now++;
      mine.push(store.create('key', 'sk-gw-noisy', 'noisy'));
    }
    expect(store.get(operator.id)?.role).toBe('operator');
    expect(store.get(other.id)?.credential).toBe('sk-gw-other');
    // The noisy key keeps its 10 most recent sessions; its older ones are gone.
    expect(mine.slice(-10).every((s) => store.get(s.id))).toBe(true);
    expect(store.get(mine.at(-11)!.id)).toBeUndefined();
    expect(store.size).toBe(12);
  });

  it("of one credential's sessions, the least recently used goes first", () => {
    let now = 0;
    const store = new SessionStore(() => now, { ttlMs: 1e9, idleMs: 1e9, maxSessions: 100, maxPerCredential: 3 });
    const [a, b, c] = [store.create('key', 'k', ''), store.create('key', 'k', ''), store.create('key', 'k', '')];
    now = 1;
    store.get(a.id);
    store.create('key', 'k', '');
    expect(store.get(b.id)).toBeUndefined();
    expect(store.get(a.id)).toBeDefined();
    expect(store.get(c.id)).toBeDefined();
  });

  it('past the global bound, key sessions make room, operator sessions never do', () => {
    let now = 0;
    const store = new SessionStore(() => now, { ttlMs: 1e9, idleMs: 1e9, maxSessions: 20, maxPerCredential: 10 });
    const operator = store.create('operator', 'admin-token', 'operator');
    const keys = [];
    for (let i = 0; i < 1_000; i++) {
      now++;
      keys.push(store.create('key', `sk-gw-${i}`, ''));
    }
    expect(store.get(operator.id)).toBeDefined();
    expect(store.size).toBeLessThanOrEqual(20);
    expect(store.get(keys.at(-1)!.id)).toBeDefined();
    expect(store.get(keys[0]!.id)).toBeUndefined();
  });

  it('signing out and expiry free the credential’s places', () => {
    let now = 0;
    const store = new SessionStore(() => now, { ttlMs: 1_000, idleMs: 1e9, maxSessions: 100, maxPerCredential: 2 });
    const a = store.create('key', 'k', '');
    const b = store.create('key', 'k', '');
    store.delete(a.id);
    store.create('key', 'k', '');
    expect(store.get(b.id)).toBeDefined();
    now = 2_000;
    const fresh = [store.create('key', 'k', ''), store.create('key', 'k', '')];
    expect(fresh.every((s) => store.get(s.id))).toBe(true);
    expect(store.size).toBe(2);
  });

  it('over HTTP: a key signing in 30 times keeps 10 live sessions and the operator stays signed in', async () => {
    const gw = await startTestGateway({});
    try {
      const signIn = async (token: string) => {
        const r = await call(gw, 'POST', '/console/session', { body: { token } });
        expect(r.status, r.text).toBe(200);
        return (r.headers.get('set-cookie') ?? '').split(';')[0]!;
      };
      const operator = await signIn(gw.adminToken);
      const { key } = await gw.newKey(1);
      const cookies = [];
      for (let i = 0; i < 30; i++) cookies.push(await signIn(key));
      expect((await call(gw, 'GET', '/admin/accounts', { headers: { cookie: operator } })).status).toBe(200);
      const live = await Promise.all(cookies.map(async (cookie) => (await call(gw, 'GET', '/console/session', { headers: { cookie } })).status));
      expect(live.slice(0, 20).every((s) => s === 401)).toBe(true);
      expect(live.slice(20).every((s) => s === 200)).toBe(true);
    } finally {
      await gw.close();
    }
  });
});
