import { describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/console/sessions.js';
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
    for (let i = 0; i < 3; i++) {
      expect(limiter.retryAfter('a')).toBe(0);
      limiter.fail('a');
    }
    expect(limiter.retryAfter('a')).toBe(60);
    expect(limiter.retryAfter('b')).toBe(0);
    now = 45_500;
    expect(limiter.retryAfter('a')).toBe(15);
    now = 60_000;
    expect(limiter.retryAfter('a')).toBe(0);
    limiter.fail('a');
    expect(limiter.retryAfter('a')).toBe(0);
  });

  it('forgets the oldest addresses past its bound', () => {
    const limiter = new SignInLimiter(() => 0, 1, 60_000, 2);
    limiter.fail('a');
    limiter.fail('b');
    limiter.fail('c');
    // 'a' was forgotten, so it may try again; 'c' is still counted.
    expect(limiter.retryAfter('a')).toBe(0);
    expect(limiter.retryAfter('c')).toBeGreaterThan(0);
  });
});
