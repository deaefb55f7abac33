import { describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/console/sessions.js';
import type { FastifyRequest } from 'fastify';
import { adminTokenGuard } from '../../src/auth/admin-token.js';
import { SignInLimiter } from '../../src/console/sign-in-limit.js';

describe('SessionStore', () => {
  it('hands out opaque random ids and CSRF tokens, and finds a session by its id only', () => {
    let now = 1_000;
    const store = new SessionStore(() => now);
    const a = store.create('key', 'sk-gw-secret', 'acme');
    const b = store.create('operator', 'admin', 'operator');
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.id).not.toBe(b.id);
    expect(a.csrf).not.toBe(a.id);
    expect(a.id).not.toContain('secret');
    expect(store.get(a.id)?.credential).toBe('sk-gw-secret');
    expect(store.get('nope')).toBeUndefined();
    expect(store.get(undefined)).toBeUndefined();
    now += 1;
    expect(store.delete(a.id)).toBe(true);
    expect(store.get(a.id)).toBeUndefined();
  });

  it('ends a session at its absolute lifetime even when used, and after its idle time when not', () => {
    let now = 0;
    const store = new SessionStore(() => now, { ttlMs: 10_000, idleMs: 3_000, maxSessions: 10 });
    const used = store.create('key', 'k1', 'a');
    const idle = store.create('key', 'k2', 'b');
    for (now = 2_000; now < 10_000; now += 2_000) expect(store.get(used.id), `at ${now}`).toBeDefined();
    expect(store.get(idle.id)).toBeUndefined();
    now = 10_000;
    expect(store.get(used.id)).toBeUndefined();
  });

  it('keeps at most maxSessions, dropping the least recently used', () => {
    let now = 0;
    const store = new SessionStore(() => now, { ttlMs: 1e9, idleMs: 1e9, maxSessions: 3 });
    const s = [store.create('key', '1', ''), store.create('key', '2', ''), store.create('key', '3', '')];
    now = 1;
    store.get(s[0]!.id);
    store.create('key', '4', '');
    expect(store.size).toBe(3);
    expect(store.get(s[1]!.id)).toBeUndefined();
    expect(store.get(s[0]!.id)).toBeDefined();
  });
});

describe('SignInLimiter', () => {
  it('allows maxFailures failed attempts per address per window, then says how long to wait', () => {
    let now = 0;
    const limiter = new SignInLimiter(() => now, 3, 60_000);
    // An attempt never marked as succeeded is a failure.
    for (let i = 0; i < 3; i++) expect(limiter.begin('a').retryAfter).toBe(0);
    expect(limiter.begin('a').retryAfter).toBe(60);
    expect(limiter.begin('b').retryAfter).toBe(0);
    now = 45_500;
    expect(limiter.begin('a').retryAfter).toBe(15);
    now = 60_000;
    expect(limiter.begin('a').retryAfter).toBe(0);
    expect(limiter.begin('a').retryAfter).toBe(0);
  });

  it('works out an attempt\'s address bucket once, whichever way the attempt goes', () => {
    const asked: string[] = [];
    const bucketOf = (ip: string) => (asked.push(ip), ip);
    const limiter = new SignInLimiter(() => 0, 1, 60_000, 10, bucketOf);
    limiter.begin('a').succeeded();
    expect(asked).toEqual(['a']);
    limiter.begin('a');
    expect(asked).toEqual(['a', 'a']);
    expect(limiter.begin('a').retryAfter).toBe(60);
    expect(asked).toEqual(['a', 'a', 'a']);
  });

  it('the admin-token guard, which shares it, works out the address once per guess too', () => {
    const asked: string[] = [];
    const limiter = new SignInLimiter(() => 0, 10, 60_000, 10, (ip) => (asked.push(ip), ip));
    const guard = adminTokenGuard('admin-token-0123456789', limiter);
    const req = (token: string) => ({ headers: { authorization: `Bearer ${token}` }, ip: '192.0.2.1' }) as unknown as FastifyRequest;
    expect(() => guard(req('wrong-token'))).toThrow(/admin token/);
    expect(asked).toHaveLength(1);
    guard(req('admin-token-0123456789'));
    expect(asked).toHaveLength(2);
    // The right token gave its place back: nine more wrong ones still leave it judged.
    for (let i = 0; i < 9; i++) expect(() => guard(req('wrong-token'))).toThrow(/admin token/);
    expect(() => guard(req('wrong-token'))).toThrow(/Too many/);
  });

  it('forgets the oldest addresses past its bound', () => {
    const limiter = new SignInLimiter(() => 0, 1, 60_000, 2);
    limiter.begin('a');
    limiter.begin('b');
    limiter.begin('c');
    // 'a' was forgotten, so it may try again; 'c' is still counted.
    expect(limiter.begin('a').retryAfter).toBe(0);
    expect(limiter.begin('c').retryAfter).toBeGreaterThan(0);
  });
});
