import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { contentRangeOf, forwardedRange, parseContentRange, parseRange, requestedStart, sliceBody } from '../../src/video/range.js';

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

  it('sends on a single range only', () => {
    expect(forwardedRange(' bytes=0-99 ')).toBe('bytes=0-99');
    expect(forwardedRange('bytes=-100')).toBe('bytes=-100');
    expect(forwardedRange('bytes=900-')).toBe('bytes=900-');
    for (const h of [undefined, '', 'bytes=0-1,5-6', 'bytes=-', 'items=0-1', 'bytes=abc', 'bytes= 1-2 3']) expect(forwardedRange(h), h).toBeUndefined();
  });

  it("reads a vendor's Content-Range as integers, or not at all", () => {
    expect(parseContentRange('bytes 5-9/100')).toEqual({ start: 5, end: 9, total: 100 });
    expect(parseContentRange('bytes 5-9/*')).toEqual({ start: 5, end: 9, total: undefined });
    expect(parseContentRange('bytes 0-0/1')).toEqual({ start: 0, end: 0, total: 1 });
    for (const h of [undefined, '', 'bytes 5-9/Bearer sk-x', 'bytes 9-5/100', 'bytes 5-100/100', 'bytes */100', 'bytes 5-9', ' bytes 5-9/100', 'bytes 5-9/100,bytes 1-2/3', 'bytes 1-9999999999999999/*'])
      expect(parseContentRange(h), h).toBeUndefined();
    expect(contentRangeOf({ start: 5, end: 9, total: undefined })).toBe('bytes 5-9/*');
    expect(contentRangeOf({ start: 5, end: 9, total: 100 })).toBe('bytes 5-9/100');
  });

  it('knows where the answer to a range must start', () => {
    expect(requestedStart('bytes=0-99', 1000)).toBe(0);
    expect(requestedStart('bytes=900-', undefined)).toBe(900);
    expect(requestedStart('bytes=-100', 1000)).toBe(900);
    expect(requestedStart('bytes=-5000', 1000)).toBe(0);
    expect(requestedStart('bytes=-100', undefined)).toBeUndefined();
  });

  it('slices a stream that arrives in odd chunks', async () => {
    const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
    const chunks = [data.subarray(0, 7), data.subarray(7, 500), data.subarray(500, 503), data.subarray(503)];
    const out: Buffer[] = [];
    for await (const c of sliceBody(Readable.from(chunks), 5, 501)) out.push(c as Buffer);
    expect(Buffer.concat(out).equals(data.subarray(5, 502))).toBe(true);
  });
});

describe('sliceBody when the source or the consumer fails', () => {
  async function drain(r: Readable): Promise<{ bytes: number; error?: string }> {
    let bytes = 0;
    try {
      for await (const c of r) bytes += (c as Buffer).length;
      return { bytes };
    } catch (e) {
      return { bytes, error: (e as NodeJS.ErrnoException).code ?? (e as Error).message };
    }
  }

  it('a source that closes before the range is complete fails the slice (the client sees a short body)', async () => {
    const source = new Readable({ read() {} });
    const slice = sliceBody(source, 0, 999);
    source.push(Buffer.alloc(100));
    setImmediate(() => source.destroy());
    expect(await drain(slice)).toEqual({ bytes: 100, error: 'ERR_STREAM_PREMATURE_CLOSE' });
  });

  it('a source that fails mid-range passes its error on, once, and nothing is left uncaught', async () => {
    const source = new Readable({ read() {} });
    const slice = sliceBody(source, 10, 999);
    source.push(Buffer.alloc(50));
    setImmediate(() => source.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })));
    expect(await drain(slice)).toEqual({ bytes: 40, error: 'ECONNRESET' });
    expect(source.destroyed).toBe(true);
  });

  it('a source that ends short of the range ends the slice as it is', async () => {
    const slice = sliceBody(Readable.from([Buffer.alloc(30)]), 10, 999);
    expect(await drain(slice)).toEqual({ bytes: 20 });
  });

  it('a consumer that leaves early destroys the source', async () => {
    const source = new Readable({ read() {} });
    const slice = sliceBody(source, 0, 1_000_000);
    source.push(Buffer.alloc(10));
    slice.destroy();
    await new Promise((r) => setImmediate(r));
    expect(source.destroyed).toBe(true);
  });
});
