import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { collectAsStreamed } from '../../src/http/stream-collect.js';

/** Long downloads collect the young generation as they stream (src/http/stream-collect.ts). */
const chunks = (count: number, size: number): Buffer[] => Array.from({ length: count }, (_, i) => Buffer.alloc(size, i % 256));

async function drain(s: Readable): Promise<Buffer> {
  const got: Buffer[] = [];
  for await (const c of s) got.push(c as Buffer);
  return Buffer.concat(got);
}

describe('collectAsStreamed', () => {
  it('passes every byte through unchanged and collects once per threshold, counted across streams', async () => {
    let collections = 0;
    const counter = { bytes: 0 };
    const a = chunks(10, 1000);
    const b = chunks(7, 1000);
    const outA = await drain(collectAsStreamed(Readable.from(a), () => collections++, 4000, counter));
    expect(outA.equals(Buffer.concat(a))).toBe(true);
    expect(collections).toBe(2); // at 4,000 and 8,000 bytes
    expect(counter.bytes).toBe(2000);
    const outB = await drain(collectAsStreamed(Readable.from(b), () => collections++, 4000, counter));
    expect(outB.equals(Buffer.concat(b))).toBe(true);
    // 2,000 left over from the first stream + 7,000: one more at 4,000 and another at 8,000.
    expect(collections).toBe(4);
    expect(counter.bytes).toBe(1000);
  });

  it('without a collector (node without --expose-gc) returns the body itself', () => {
    const body = new PassThrough();
    expect(collectAsStreamed(body, null)).toBe(body);
  });

  it('an upstream failure mid-body ends the stream the client reads, with no uncaught error', async () => {
    const source = new PassThrough();
    const out = collectAsStreamed(source, () => undefined, 10, { bytes: 0 });
    source.write(Buffer.alloc(100));
    source.destroy(new Error('upstream reset'));
    await expect(drain(out)).rejects.toThrow();
    expect(out.destroyed).toBe(true);
  });

  it('a client that leaves releases the upstream body', async () => {
    const source = new PassThrough();
    const out = collectAsStreamed(source, () => undefined, 10, { bytes: 0 });
    out.destroy();
    await new Promise((r) => source.once('close', r));
    expect(source.destroyed).toBe(true);
  });

  it('with --expose-gc the default collector is a real scavenge that frees the chunks already streamed', () => {
    // A fresh child per variant streams 64 MB of 64 KB chunks (fresh buffers outside the heap, as
    // socket reads make) into a sink: the peak of array-buffer memory, and the scavenges seen.
    const measure = (wrap: boolean): { peakMb: number; scavenges: number } => {
      const script = `
        const { Readable, Writable, pipeline } = require('node:stream');
        const { PerformanceObserver, constants } = require('node:perf_hooks');
        const { collectAsStreamed } = require(${JSON.stringify(resolve('dist/http/stream-collect.js'))});
        let scavenges = 0;
        new PerformanceObserver((list) => {
          for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
        }).observe({ entryTypes: ['gc'] });
        let n = 0;
        const src = new Readable({ read() { this.push(n++ < 1024 ? Buffer.allocUnsafeSlow(65536) : null); } });
        const before = process.memoryUsage().arrayBuffers;
        let peak = 0;
        const sink = new Writable({ write(c, e, cb) { peak = Math.max(peak, process.memoryUsage().arrayBuffers - before); cb(); } });
        pipeline(${wrap ? 'collectAsStreamed(src)' : 'src'}, sink, (err) => {
          if (err) throw err;
          // GC entries reach the observer on a later turn.
          setTimeout(() => console.log(JSON.stringify({ peakMb: peak / 2 ** 20, scavenges })), 200);
        });
      `;
      const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as { peakMb: number; scavenges: number };
    };
    const plain = measure(false);
    const collected = measure(true);
    // The premise: without it, dead chunks pile up far past the threshold.
    expect(plain.peakMb).toBeGreaterThan(24);
    // With it: one scavenge per 8 MB, and never much more than 8 MB (plus what is in flight) held.
    expect(collected.scavenges).toBeGreaterThanOrEqual(7);
    expect(collected.peakMb).toBeLessThan(17);
  });
});
