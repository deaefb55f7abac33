import { describe, expect, it } from 'vitest';
import { clip, compileSecrets, redact } from '../../src/core/redact.js';
import { createLogger } from '../../src/ops/logger.js';

/**
 * What a cut of upstream text leaves of a configured credential: its first characters, which the
 * exact-value layer no longer knows as the credential. They go where text was cut (the end, and
 * before "..." or "…"), in every spelling the redaction knows, when they are long enough to matter.
 */
const KEY = 'Zq8Wm3RtPv7Lx2Nc9Hb4Kd6Jf0Gy5Ts';
const SHORT = 'Pq7Rs2Tu';
const SLASHED = 'Ab3/Cd4/Ef5/Gh6/Ij7';
const secrets = compileSecrets([KEY, SHORT, SLASHED]);
const hex = (s: string) => Buffer.from(s).toString('hex');
const percentAll = (s: string) => hex(s).replace(/(..)/g, '%$1');

describe('clip', () => {
  it('leaves text within the bound as it is, and marks a cut', () => {
    expect(clip('short', 10)).toBe('short');
    expect(clip('0123456789abc', 10)).toBe('0123456789...');
  });

  it('never splits a character of two UTF-16 units', () => {
    expect(clip('abc\u{1f511}def', 4)).toBe('abc...');
  });
});

describe('redact: a credential cut short', () => {
  it.each([
    ['at the end', (p: string) => `bad key ${p}`, 'bad key [redacted]'],
    ['before "..."', (p: string) => `bad key ${p}... (400)`, 'bad key [redacted]... (400)'],
    ['before "…"', (p: string) => `bad key ${p}\u2026`, 'bad key [redacted]\u2026'],
    ['as clip cuts it', (p: string) => clip(`bad key ${p}${KEY.slice(p.length)} and more`, 8 + p.length), 'bad key [redacted]...'],
  ])('removes its first characters %s', (_where, make, expected) => {
    for (const n of [6, 10, KEY.length - 1]) {
      expect(redact(make(KEY.slice(0, n)), secrets)).toBe(expected);
      expect(redact(make(KEY.slice(0, n).toLowerCase()), secrets)).toBe(expected);
    }
  });

  it('removes the first bytes of its hex, in either case, and of a base64 run holding it', () => {
    expect(redact(`dump ${hex(KEY).slice(0, 21)}...`, secrets)).toBe('dump [redacted]...');
    expect(redact(`dump ${hex(KEY).slice(0, 12).toUpperCase()}`, secrets)).toBe('dump [redacted]');
    const basic = Buffer.from(`user:${KEY}`).toString('base64');
    expect(redact(`Authorization: Basic ${basic.slice(0, 20)}...`, secrets)).toBe('Authorization: Basic [redacted]...');
  });

  it('removes the first bytes of its hex with a separator between bytes, wherever the cut falls', () => {
    for (const sep of [':', '-', ' ']) {
      const spelt = [...Buffer.from(KEY)].map((b) => b.toString(16).padStart(2, '0')).join(sep).toUpperCase();
      for (let n = 17; n < spelt.length; n++) expect(redact(`fingerprint ${spelt.slice(0, n)}...`, secrets)).toBe('fingerprint [redacted]...');
      expect(redact(`fingerprint ${spelt.slice(0, 14)}...`, secrets)).toBe(`fingerprint ${spelt.slice(0, 14)}...`);
    }
  });

  it('removes them percent-encoded, and JSON-escaped, also where the cut ends inside an escape', () => {
    expect(redact(`GET /x?k=${percentAll(KEY).slice(0, 30)}`, secrets)).toBe('GET /x?k=[redacted]');
    expect(redact(`GET /x?k=${percentAll(KEY).slice(0, 31)}`, secrets)).toBe('GET /x?k=[redacted]');
    expect(redact(`GET /x?k=${encodeURIComponent(SLASHED).slice(0, 12)}...`, secrets)).toBe('GET /x?k=[redacted]...');
    expect(redact(`{"m":"key ${SLASHED.replace(/\//g, '\\/').slice(0, 10)}`, secrets)).toBe('{"m":"key [redacted]');
  });

  it('removes half of a short credential, not less', () => {
    expect(redact(`key ${SHORT.slice(0, 4)}...`, secrets)).toBe('key [redacted]...');
    expect(redact(`key ${SHORT.slice(0, 3)}...`, secrets)).toBe(`key ${SHORT.slice(0, 3)}...`);
  });

  it('leaves fewer characters, and the same characters where nothing was cut', () => {
    for (const text of [`key ${KEY.slice(0, 5)}...`, `key ${KEY.slice(0, 10)} was rejected`, `key ${KEY.slice(1, 12)}`, 'Processing... done', '...', ''])
      expect(redact(text, secrets)).toBe(text);
  });

  it('is removed from a log line', () => {
    const lines: string[] = [];
    const log = createLogger('info', { secrets: [KEY], sink: { write: (l: string) => void lines.push(l) } });
    log.warn(`attempt failed: bad key ${KEY.slice(0, 9)}...`);
    log.flush();
    expect(lines.join('')).toContain('bad key [redacted]...');
    expect(lines.join('')).not.toContain(KEY.slice(0, 6));
  });
});
