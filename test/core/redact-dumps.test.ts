import { describe, expect, it } from 'vitest';
import { clip, compileSecrets, redact } from '../../src/core/redact.js';
import { hexdumpC, od, xxd, xxdPlain } from '../helpers/dumps.js';

/**
 * A configured credential in a hex dump: its hex cut into groups and lines with offsets between
 * them, and its characters in a column split every 16 (or 8) bytes. None of it may stay.
 */
const KEY = 'Zq8Wm3RtPv7Lx2Nc9Hb4Kd6Jf0Gy5Ts';
const secrets = compileSecrets([KEY]);
const hex = Buffer.from(KEY).toString('hex');

/** No run of six characters of the key, nor of 12 digits of its hex, in the text (any case, any spacing). */
function expectNone(text: string): void {
  const digits = text.replace(/[^0-9a-f]/gi, '').toLowerCase();
  const squeezed = text.replace(/\s|\\n|\|/g, '');
  for (let i = 0; i + 12 <= hex.length; i += 2) expect(digits, hex.slice(i, i + 12)).not.toContain(hex.slice(i, i + 12));
  for (let i = 0; i + 6 <= KEY.length; i++) expect(squeezed, KEY.slice(i, i + 6)).not.toContain(KEY.slice(i, i + 6));
}

const DUMPS: [string, (b: Buffer) => string][] = [
  ['xxd', (b) => xxd(b)],
  ['xxd -g1', (b) => xxd(b, 1)],
  ['xxd -g4', (b) => xxd(b, 4)],
  ['xxd -c8', (b) => xxd(b, 2, 8)],
  ['hexdump -C', hexdumpC],
  ['od -A x -t x1z', od],
  ['xxd -p', xxdPlain],
];

describe('redact: a configured credential in a hex dump', () => {
  it.each(DUMPS)('removes its bytes and characters from %s output, wherever it starts', (_tool, dump) => {
    for (const before of ['', 'GET /x ', 'POST /v1 HTTP/1.1\r\nAuthorization: Basic ']) {
      const text = `upstream dump:\n${dump(Buffer.from(`${before}${KEY} trailing text\n`))}`;
      const out = redact(text, secrets);
      expectNone(out);
      // The lines of a dump with offsets stay lines (plain hex, cut at no offset, is redacted as one run).
      if (dump !== xxdPlain) expect(out.split('\n').length).toBe(text.split('\n').length);
      expect(out).toContain('[redacted]');
      // JSON-escaped, inside a log line or an error message.
      const json = redact(JSON.stringify({ msg: text }), secrets);
      expectNone(json);
      expect(JSON.parse(json).msg).toContain('[redacted]');
    }
  });

  it.each(DUMPS.slice(0, 6))('removes the first bytes of it where %s output is cut short, wherever the cut falls', (_tool, dump) => {
    const full = `dump:\n${dump(Buffer.from(`GET /x ${KEY} trailing text\n`))}`;
    for (let n = 20; n < full.length; n++) expectNone(redact(clip(full, n), secrets));
  });

  it('keeps the rest of the dump as it was', () => {
    const out = redact(`dump:\n${xxd(Buffer.from(`GET /x ${KEY} trailing text\n`))}`, secrets);
    expect(out).toBe(
      'dump:\n' +
        '00000000: 4745 5420 2f78 20[redacted]  GET /x [redacted]\n' +
        '00000010: [redacted]  [redacted]\n' +
        '00000020: [redacted] 2074 7261 696c 696e 6720  [redacted] trailing \n' +
        '00000030: 7465 7874 0a                             text.\n',
    );
  });

  it('leaves dumps of other bytes, and lines that only look like offsets, unchanged', () => {
    for (const text of [
      `dump:\n${xxd(Buffer.from(`GET /x ${KEY.split('').reverse().join('')} trailing\n`))}`,
      `dump:\n${hexdumpC(Buffer.from('another value entirely, long enough to span lines'))}`,
      'counts:\n1234 items\ndead beef cafe\n2024-01-01 done',
    ])
      expect(redact(text, secrets)).toBe(text);
  });

  it('does not join two dumps with other text between them', () => {
    // Five bytes of the key where the first ends: fewer than a cut must not leave (redact-cut.ts).
    const head = xxd(Buffer.from(`x${KEY.slice(0, 5)}`));
    const tail = xxd(Buffer.from(KEY.slice(5)));
    const text = `first:\n${head}second:\n${tail}`;
    expect(redact(text, secrets)).toBe(text);
  });
});
