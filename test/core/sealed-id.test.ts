import { describe, expect, it } from 'vitest';
import { redact } from '../../src/core/redact.js';
import { IdSealer, looksLikeCredential } from '../../src/core/sealed-id.js';

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

  it('opens ids sealed before a rotation', () => {
    const old = new IdSealer(['first-secret-0123456']);
    const id = old.seal(claims);
    const rotated = new IdSealer(['first-secret-0123456', 'second-secret-0123456']);
    expect(rotated.open(id)).toEqual(claims);
    const fresh = rotated.seal(claims);
    expect(old.open(fresh)).toBeUndefined();
    expect(rotated.open(fresh)).toEqual(claims);
  });

  it('seals ids that hold nothing the log redactor takes for a credential', () => {
    // About one random id in twenty would: 300 ids without one cannot be luck (0.95^300 < 1e-6).
    const s = new IdSealer(['0123456789abcdef-secret']);
    const long = { ...claims, j: '7f9c2b1e-5d4a-4c3b-9e8f-0a1b2c3d4e5f', a: '1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9', t: `task_${'x'.repeat(60)}` };
    for (let i = 0; i < 300; i++) {
      const id = s.seal(long);
      expect(looksLikeCredential(id), id).toBe(false);
      expect(redact(`/v1/videos/${id}`)).toBe(`/v1/videos/${id}`);
      expect(s.open(id)).toEqual(long);
    }
  });

  it('tells the redactor\'s telltale pieces in any case', () => {
    expect(looksLikeCredential('abcKeYdef')).toBe(true);
    expect(looksLikeCredential('xxEyJxx')).toBe(true);
    expect(looksLikeCredential('xxsk-xx')).toBe(true);
    expect(looksLikeCredential('xx0123456789abcDEFxx')).toBe(true);
    expect(looksLikeCredential('xx0123456789abcDxx')).toBe(false);
    expect(looksLikeCredential('AQAbcdefghijmnopqrstuvwxyz_-')).toBe(false);
  });
});
