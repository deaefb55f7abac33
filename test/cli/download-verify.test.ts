import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { localServer, spawnCli, STACK, type LocalServer } from './spawn.js';

/**
 * `gateway video download` against a content endpoint the test controls: what it splices onto a
 * partial file, what it renames over, and how a local failure reads.
 */
interface Video {
  bytes: Buffer;
  etag?: string;
  /** Sent chunked, without a Content-Length (and Range requests ignored). */
  unannounced?: boolean;
}
const videos = new Map<string, Video>();
/** Range headers of the content requests, in order. */
let ranges: (string | undefined)[] = [];
/** Cut the next whole-file answer after this many bytes, then refuse (503) every Range request: an interrupted run. */
let interruptAt: number | undefined;
let api: LocalServer;
let dir: string;

beforeAll(async () => {
  api = await localServer((req, res) => {
    const m = /^\/v1\/videos\/([^/]+)\/content$/.exec(req.url ?? '');
    const video = m ? videos.get(m[1]!) : undefined;
    if (!video) return res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"type":"not_found_error","message":"No such video."}}');
    ranges.push(req.headers.range);
    const { bytes, etag } = video;
    const validators = etag ? { etag } : {};
    if (video.unannounced) {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      for (let at = 0; at < bytes.length; at += 16_384) res.write(bytes.subarray(at, at + 16_384));
      return res.end();
    }
    const from = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1];
    if (from !== undefined) {
      if (interruptAt !== undefined) return res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"type":"server_error","message":"down"}}');
      const start = Number(from);
      if (start >= bytes.length) return res.writeHead(416, { 'content-range': `bytes */${bytes.length}` }).end();
      res.writeHead(206, { ...validators, 'content-type': 'video/mp4', 'content-range': `bytes ${start}-${bytes.length - 1}/${bytes.length}`, 'content-length': bytes.length - start });
      return res.end(bytes.subarray(start));
    }
    res.writeHead(200, { ...validators, 'content-type': 'video/mp4', 'content-length': bytes.length });
    if (interruptAt === undefined) return res.end(bytes);
    // The cut comes once the bytes have had time to arrive: a connection lost mid-body.
    res.write(bytes.subarray(0, interruptAt), () => setTimeout(() => res.destroy(), 50));
  });
  dir = mkdtempSync(join(tmpdir(), 'gw-cli-dl-'));
});
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  videos.clear();
  ranges = [];
  interruptAt = undefined;
});

const download = (id: string, out: string) => spawnCli(['video', 'download', id, '--output', out, '--url', api.url, '--key', 'k']);

/** A download of `id` cut after `at` bytes and not continued: it leaves `out.part` behind, as an earlier run would. */
async function interrupted(id: string, out: string, at: number): Promise<void> {
  interruptAt = at;
  const r = await download(id, out);
  interruptAt = undefined;
  expect(r.code, r.err).toBe(1);
  expect(readFileSync(`${out}.part`).length).toBe(at);
  ranges = [];
}

describe('video download: what is on disk is continued only when it is the same video', () => {
  it('a leftover .part of unknown origin is not spliced in: the file starts over and is the video', async () => {
    videos.set('a', { bytes: randomBytes(200_000) });
    const out = join(dir, 'stale.mp4');
    writeFileSync(`${out}.part`, randomBytes(5_000));
    const r = await download('a', out);
    expect(r.code, r.err).toBe(0);
    expect(ranges).toEqual([undefined]);
    expect(readFileSync(out).equals(videos.get('a')!.bytes)).toBe(true);
    expect(existsSync(`${out}.part`)).toBe(false);
  }, 30_000);

  it('a .part another video left is not spliced in', async () => {
    videos.set('a', { bytes: randomBytes(200_000) });
    videos.set('b', { bytes: randomBytes(300_000) });
    const out = join(dir, 'other.mp4');
    await interrupted('b', out, 50_000);
    const r = await download('a', out);
    expect(r.code, r.err).toBe(0);
    expect(ranges).toEqual([undefined]);
    expect(readFileSync(out).equals(videos.get('a')!.bytes)).toBe(true);
  }, 30_000);

  it("an earlier run's .part of the same video is continued with a Range request", async () => {
    videos.set('a', { bytes: randomBytes(200_000), etag: '"v1"' });
    const out = join(dir, 'resumed.mp4');
    await interrupted('a', out, 80_000);
    const r = await spawnCli(['video', 'download', 'a', '--output', out, '--url', api.url, '--key', 'k', '--json']);
    expect(r.code, r.err).toBe(0);
    expect(ranges).toEqual(['bytes=80000-']);
    expect(JSON.parse(r.out)).toEqual({ path: out, bytes: 200_000, resumes: 1 });
    expect(readFileSync(out).equals(videos.get('a')!.bytes)).toBe(true);
    expect(existsSync(`${out}.part`) || existsSync(`${out}.part.json`)).toBe(false);
  }, 30_000);

  it.each([
    ['its total size', { bytes: randomBytes(250_000) }],
    ['its ETag', { bytes: randomBytes(200_000), etag: '"v2"' }],
  ])('a video that changed since (%s) is downloaded again from its first byte', async (_, changed) => {
    videos.set('a', { bytes: randomBytes(200_000), etag: '"v1"' });
    const out = join(dir, `changed-${changed.bytes.length}.mp4`);
    await interrupted('a', out, 80_000);
    videos.set('a', changed);
    const r = await download('a', out);
    expect(r.code, r.err).toBe(0);
    expect(ranges).toEqual(['bytes=80000-', undefined]);
    expect(readFileSync(out).equals(changed.bytes)).toBe(true);
  }, 30_000);
});

describe('video download: local failures and files that are not regular', () => {
  it('--output in a directory that does not exist: one line naming the path, exit 1', async () => {
    videos.set('a', { bytes: randomBytes(10_000) });
    const out = join(dir, 'missing', 'x.mp4');
    const r = await download('a', out);
    expect(r.err).not.toMatch(STACK);
    expect(r.err).not.toMatch(/Unhandled|RequestAborted/);
    expect(r.err).toMatch(new RegExp(`^error: cannot write ${out.replace(/[.\\/]/g, '\\$&')}: ENOENT[^\n]*\n$`));
    expect(r.code).toBe(1);
  }, 30_000);

  it('--output naming a device (through a link to /dev/full): written in place, ENOSPC as one line, the link kept', async () => {
    videos.set('a', { bytes: randomBytes(10_000) });
    const link = join(dir, 'full.mp4');
    // The link is what a rename would replace; the device itself is only ever opened for writing.
    symlinkSync('/dev/full', link);
    const r = await download('a', link);
    expect(r.err).not.toMatch(STACK);
    // Progress lines come first on stderr; the failure is the last line.
    expect(r.err).toMatch(/\nerror: cannot write [^\n]*full\.mp4: ENOSPC[^\n]*\n$/);
    expect(r.code).toBe(1);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(existsSync(`${link}.part`)).toBe(false);
  }, 30_000);

  it('--output naming a FIFO: the video goes through it, and it stays a FIFO', async () => {
    videos.set('a', { bytes: randomBytes(200_000) });
    const fifo = join(dir, 'pipe.mp4');
    execFileSync('mkfifo', [fifo]);
    const chunks: Buffer[] = [];
    const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
    reader.stdout.on('data', (c: Buffer) => chunks.push(c));
    const read = new Promise((r) => reader.once('close', r));
    try {
      const r = await download('a', fifo);
      expect(r.code, r.err).toBe(0);
      expect(lstatSync(fifo).isFIFO()).toBe(true);
      await read;
      expect(Buffer.concat(chunks).equals(videos.get('a')!.bytes)).toBe(true);
    } finally {
      if (reader.exitCode === null) reader.kill();
    }
  }, 30_000);
});

describe('video download is bounded by --max-bytes, announced or not', () => {
  it('past the bound: stopped, the partial file removed, one line and exit 1', async () => {
    videos.set('a', { bytes: randomBytes(1_000_000), unannounced: true });
    const out = join(dir, 'endless.mp4');
    const r = await spawnCli(['video', 'download', 'a', '--output', out, '--max-bytes', '100000', '--url', api.url, '--key', 'k']);
    expect(r.err).not.toMatch(STACK);
    expect(r.err).toMatch(/\nerror: the server sent more than 100000 bytes for [^\n]*endless\.mp4 without announcing a size; stopped \(the partial file was removed; --max-bytes allows more\)\n$/);
    expect(r.code).toBe(1);
    // Not tried again: the same server would send the same unbounded body.
    expect(ranges).toEqual([undefined]);
    expect(existsSync(out) || existsSync(`${out}.part`) || existsSync(`${out}.part.json`)).toBe(false);
  }, 30_000);

  it('within the bound: saved whole', async () => {
    videos.set('a', { bytes: randomBytes(100_000), unannounced: true });
    const out = join(dir, 'unannounced.mp4');
    const r = await spawnCli(['video', 'download', 'a', '--output', out, '--max-bytes', '100000', '--url', api.url, '--key', 'k']);
    expect(r.code, r.err).toBe(0);
    expect(readFileSync(out).equals(videos.get('a')!.bytes)).toBe(true);
    expect(existsSync(`${out}.part`)).toBe(false);
  }, 30_000);

  it('an announced size over the bound: refused before a byte is written, one line and exit 1', async () => {
    videos.set('a', { bytes: randomBytes(1_000_000) });
    const out = join(dir, 'announced.mp4');
    const r = await spawnCli(['video', 'download', 'a', '--output', out, '--max-bytes', '100000', '--url', api.url, '--key', 'k']);
    expect(r.err).not.toMatch(STACK);
    expect(r.err).toMatch(/^error: the server announced 1000000 bytes, more than --max-bytes \(100000\); not downloading\n$/);
    expect(r.code).toBe(1);
    expect(ranges).toEqual([undefined]);
    expect(existsSync(out) || existsSync(`${out}.part`) || existsSync(`${out}.part.json`)).toBe(false);
  }, 30_000);

  it('--max-bytes that is not a positive whole number is a usage error', async () => {
    const r = await spawnCli(['video', 'download', 'a', '--max-bytes', '1.5', '--url', api.url, '--key', 'k']);
    expect(r.err).toMatch(/--max-bytes must be a positive whole number, not '1\.5'/);
    expect(r.code).toBe(2);
  }, 30_000);
});
