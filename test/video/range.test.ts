import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseRange, sliceBody } from '../../src/video/range.js';

describe('byte ranges', () => {
  it('parses the forms players send', () => {
    expect(parseRange('bytes=0-99', 1000)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=900-', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=-100', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=990-5000', 1000)).toEqual({ start: 990, end: 999 });
    expect(parseRange('bytes=1000-', 1000)).toBe('unsatisfiable');
    expect(parseRange('bytes=5-2', 1000)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-1,5-6', 1000)).toBeUndefined();
    expect(parseRange(undefined, 1000)).toBeUndefined();
  });

  it('slices a stream that arrives in odd chunks', async () => {
    const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
    const chunks = [data.subarray(0, 7), data.subarray(7, 500), data.subarray(500, 503), data.subarray(503)];
    const out: Buffer[] = [];
    for await (const c of sliceBody(Readable.from(chunks), 5, 501)) out.push(c as Buffer);
    expect(Buffer.concat(out).equals(data.subarray(5, 502))).toBe(true);
  });
});
