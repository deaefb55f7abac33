import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { completedJobBehindVendor, type ContentSetup } from './content-vendor.js';

/**
 * A vendor that ignores Range and answers every download with the whole of a large video: the
 * gateway slices the range itself, and must stop the vendor's body once the slice is complete
 * rather than download the rest (a player's first request is a tiny probe such as bytes=0-1).
 */

const SIZE = 200 * 1024 * 1024;
/** Byte i of the video is i % 251, so any slice can be checked; a chunk of 251 * 256 bytes is the pattern from any chunk boundary. */
const CHUNK = Buffer.from(Array.from({ length: 251 * 256 }, (_, i) => i % 251));
/** The video starts as an MP4 does (an `ftyp` box), which the gateway checks before passing it on. */
const HEAD = Buffer.from('00000018667479706d703432', 'hex');
const FIRST = Buffer.concat([HEAD, CHUNK.subarray(HEAD.length)]);
const byteAt = (i: number) => (i < HEAD.length ? HEAD[i]! : i % 251);
const expected = (start: number, end: number) => Buffer.from(Array.from({ length: end - start + 1 }, (_, i) => byteAt(start + i)));

/** One content answer of the vendor: how many bytes it handed to its socket, and whether it is over. */
interface Served {
  sent: number;
  closed: boolean;
  range: string | undefined;
}

/**
 * The vendor's content answer: 200 and the whole video, whatever the Range header says, counting
 * what it writes (the rest of the Sora protocol is the simulator's, through ContentVendor).
 */
const served: Served[] = [];
function wholeVideo(req: IncomingMessage, res: ServerResponse): void {
  const one: Served = { sent: 0, closed: false, range: req.headers.range };
  served.push(one);
  let pos = 0;
  const body = new Readable({
    read() {
      if (pos >= SIZE) return void this.push(null);
      const n = Math.min(CHUNK.length, SIZE - pos);
      const chunk = pos === 0 ? FIRST : CHUNK;
      pos += n;
      this.push(n === chunk.length ? chunk : chunk.subarray(0, n));
    },
  });
  body.on('data', (c: Buffer) => (one.sent += c.length));
  res.on('close', () => {
    one.closed = true;
    body.destroy();
  });
  res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(SIZE), 'accept-ranges': 'none' });
  body.pipe(res);
}

/** Waits until `check` holds, or gives up. */
async function eventually(check: () => boolean, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** A download over its own connection: status, headers and every byte, or (with `leaveAfter`) a hang-up once that many bytes came. */
function get(url: string, headers: Record<string, string>, leaveAfter?: number): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { connection: 'close', ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let got = 0;
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        got += c.length;
        if (leaveAfter !== undefined && got >= leaveAfter) req.destroy();
      });
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), complete: res.complete }));
    });
    req.on('error', (e) => (leaveAfter === undefined ? reject(e) : undefined));
    req.end();
  });
}

/** What the socket buffers on loopback take in before the gateway stops reading (measured: about 4 MB). */
const BUFFERED = 16 * 1024 * 1024;

let setup: ContentSetup;
let gw: TestGateway;
let key: string;
let job: string;
let lines: string[];

beforeAll(async () => {
  setup = await completedJobBehindVendor();
  setup.vendor.answer = wholeVideo;
  ({ gw, key, job, lines } = setup);
}, 30_000);

afterAll(async () => {
  await setup?.close();
});

beforeEach(() => {
  served.length = 0;
  lines.length = 0;
});

const content = () => `${gw.url}/v1/videos/${job}/content`;
const errorLines = () => lines.filter((l) => JSON.parse(l).level >= 50);

describe('a vendor that ignores Range and serves a 200 MB video', () => {
  for (const [range, start, end] of [
    ['bytes=0-0', 0, 0],
    ['bytes=0-1', 0, 1],
    ['bytes=5000000-5000999', 5_000_000, 5_000_999],
  ] as const) {
    it(`${range}: the client gets exactly the slice, and the vendor body is stopped there`, async () => {
      const r = await get(content(), { authorization: `Bearer ${key}`, range });
      expect(r.status).toBe(206);
      expect(r.complete).toBe(true);
      expect(r.headers['content-range']).toBe(`bytes ${start}-${end}/${SIZE}`);
      expect(r.headers['content-length']).toBe(String(end - start + 1));
      expect(r.body.equals(expected(start, end))).toBe(true);
      // The vendor saw the Range header (and ignored it); its answer is over long before 200 MB.
      expect(served).toHaveLength(1);
      expect(served[0]!.range).toBe(range);
      expect(await eventually(() => served[0]!.closed), 'the vendor answer is still open').toBe(true);
      expect(served[0]!.sent).toBeLessThan(end + 1 + BUFFERED);
      expect(errorLines()).toEqual([]);
    });
  }

  it('a client hanging up in the middle of a large slice releases the vendor body too', async () => {
    const r = await get(content(), { authorization: `Bearer ${key}`, range: 'bytes=1000-' }, 2 * 1024 * 1024);
    expect(r.status).toBe(206);
    expect(r.complete).toBe(false);
    expect(r.body.subarray(0, 4096).equals(expected(1000, 1000 + 4095))).toBe(true);
    expect(await eventually(() => served[0]?.closed === true), 'the vendor answer is still open').toBe(true);
    expect(served[0]!.sent).toBeLessThan(SIZE / 2);
    expect(errorLines()).toEqual([]);
    // The gateway goes on serving.
    const after = await get(content(), { authorization: `Bearer ${key}`, range: 'bytes=0-1' });
    expect(after.status).toBe(206);
    expect(after.body.equals(expected(0, 1))).toBe(true);
  });

  it('without a Range header the whole body is passed on, and is not cut short', async () => {
    const r = await get(content(), { authorization: `Bearer ${key}` });
    expect(r.status).toBe(200);
    expect(r.complete).toBe(true);
    expect(r.body.length).toBe(SIZE);
    expect(r.body.subarray(0, 4096).equals(expected(0, 4095))).toBe(true);
    expect(r.body.subarray(SIZE - 251).equals(expected(SIZE - 251, SIZE - 1))).toBe(true);
  }, 30_000);
});
