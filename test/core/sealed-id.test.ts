import { describe, expect, it } from 'vitest';
import { IdSealer } from '../../src/core/sealed-id.js';

const claims = { j: 'job-1', a: 'acct-1', u: 'sora-main', v: 'sora', m: 'sora-2', d: 8, t: 'video_abc/def' };

describe('sealed video ids', () => {
  it('round-trips, is URL-safe and reveals nothing in clear', () => {
    const s = new IdSealer(['0123456789abcdef-secret']);
    const id = s.seal(claims);
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(id).not.toContain('sora');
    expect(Buffer.from(id, 'base64url').toString('latin1')).not.toContain('acct-1');
    expect(s.open(id)).toEqual(claims);
    expect(s.seal(claims)).not.toBe(id); // random IV
  });

  it('rejects tampered, truncated and foreign ids', () => {
    const s = new IdSealer(['0123456789abcdef-secret']);
    const id = s.seal(claims);
    const flipped = id.slice(0, 20) + (id[20] === 'A' ? 'B' : 'A') + id.slice(21);
    expect(s.open(flipped)).toBeUndefined();
    expect(s.open(id.slice(0, -3))).toBeUndefined();
    expect(s.open('')).toBeUndefined();
    expect(s.open('not/valid')).toBeUndefined();
    expect(new IdSealer(['another-secret-entirely']).open(id)).toBeUndefined();
  });

  it('opens only the spelling it sealed, not the aliases lenient base64url decoding would allow', () => {
    const s = new IdSealer(['0123456789abcdef-secret']);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    let aliasesTried = 0;
    // Claims of different lengths, so that ids end on each of the partial base64 groups.
    for (const t of ['a', 'ab', 'abc', 'abcd']) {
      const id = s.seal({ ...claims, t });
      expect(s.open(id)?.t).toBe(t);
      const head = id.slice(0, -1);
      for (const c of alphabet) {
        if (c === id.at(-1)) continue;
        const other = head + c;
        // Those that decode to the same bytes are aliases: none may open.
        if (Buffer.from(other, 'base64url').equals(Buffer.from(id, 'base64url'))) {
          aliasesTried++;
          expect(s.open(other)).toBeUndefined();
        }
      }
    }
    expect(aliasesTried).toBeGreaterThan(0);
  });

  it('opens ids sealed before a rotation', () => {
    const old = new IdSealer(['first-secret-0123456']);
    const id = old.seal(claims);
    const rotated = new IdSealer(['first-secret-0123456', 'second-secret-0123456']);
    expect(rotated.open(id)).toEqual(claims);
    const fresh = rotated.seal(claims);
    expect(old.open(fresh)).toBeUndefined();
    expect(rotated.open(fresh)).toEqual(claims);
  });

  it('keeps opening ids sealed under the new secret once the old one is dropped, and nothing under a secret not configured', () => {
    const rotating = new IdSealer(['first-secret-0123456', 'second-secret-0123456']);
    const id = rotating.seal(claims);
    const done = new IdSealer(['second-secret-0123456']);
    expect(done.open(id)).toEqual(claims);
    expect(new IdSealer(['first-secret-0123456']).open(id)).toBeUndefined();
    expect(new IdSealer(['third-secret-0123456', 'first-secret-0123456']).open(id)).toBeUndefined();
  });

  it('remembers the claims of an id opened again within ten seconds, not of one opened once', () => {
    let now = 0;
    const s = new IdSealer(['0123456789abcdef-secret'], () => now);
    const id = s.seal(claims);
    // A remembered id answers with the same object; a decrypted one with a new object each time.
    const first = s.open(id);
    expect(Object.isFrozen(first)).toBe(true);
    now = 20_000;
    const late = s.open(id);
    expect(late).toEqual(claims);
    expect(late).not.toBe(first);
    now = 25_000;
    const again = s.open(id);
    expect(again).not.toBe(late);
    now = 26_000;
    expect(s.open(id)).toBe(again);
  });
});
