import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sampleMp4 } from '../../src/sim/media.js';
import type { TestGateway } from '../helpers/gateway.js';
import { completedJobBehindVendor, type ContentAnswer, type ContentSetup, type ContentVendor } from './content-vendor.js';

/**
 * A vendor whose 206 answers to the video download lie about what they hold: a partial answer to a
 * request that asked for no range, a range starting elsewhere than the one asked for (the first
 * bytes are only sniffed when the answer starts at byte 0, so a claimed offset would skip the check),
 * or a Content-Range that is not one (quoting the credential the gateway sent). Each is 502
 * upstream_error with nothing of the answer passed on; honest ranges still stream, their
 * Content-Range rebuilt from its numbers.
 */

const UPSTREAM_KEY = 'sk-upstreamSECRET-0123456789abcdef';
const mp4 = sampleMp4();

type Answer = ContentAnswer;

/** A 206 with the Content-Range the test gives (`contentRange` sees the request), whatever was asked. */
const partial =
  (contentRange: (req: IncomingMessage) => string, body: (req: IncomingMessage) => Buffer | string, type = 'application/octet-stream', length = true): Answer =>
  (req, res) => {
    const bytes = Buffer.from(body(req));
    res.writeHead(206, { 'content-type': type, 'content-range': contentRange(req), ...(length ? { 'content-length': String(bytes.length) } : {}) });
    res.end(bytes);
  };

/** An HTML page quoting the credential the gateway sent. */
const echoedPage = (req: IncomingMessage) => `<html>${req.headers.authorization}</html>`;

let setup: ContentSetup;
let vendor: ContentVendor;
let gw: TestGateway;
let key: string;
let job: string;
let lines: string[];

beforeAll(async () => {
  setup = await completedJobBehindVendor({ upstreamKey: UPSTREAM_KEY });
  ({ vendor, gw, key, job, lines } = setup);
}, 30_000);

afterAll(async () => {
  await setup?.close();
});

beforeEach(() => {
  vendor.seen.length = 0;
  lines.length = 0;
});

async function content(headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer; text: string }> {
  const res = await fetch(`${gw.url}/v1/videos/${job}/content`, { headers: { authorization: `Bearer ${key}`, ...headers } });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes, text: bytes.toString('latin1') };
}

/** 502 upstream_error quoting nothing of the vendor's answer, in its body or its headers; one redacted warning in the log. */
function expectRefused(r: { status: number; headers: Headers; text: string }, reason: RegExp): void {
  expect(r.status, r.text).toBe(502);
  const body = JSON.parse(r.text);
  expect(body.error.type).toBe('server_error');
  expect(body.error.code).toBe('upstream_error');
  expect(r.text).not.toMatch(/upstreamSECRET|html/i);
  expect(r.headers.get('content-range')).toBeNull();
  for (const [, v] of r.headers) expect(v).not.toContain('upstreamSECRET');
  const refusals = lines.filter((l) => l.includes('not the media asked for')).map((l) => JSON.parse(l));
  expect(refusals).toHaveLength(1);
  expect(refusals[0].reason).toMatch(reason);
  for (const l of lines) expect(l).not.toContain('upstreamSECRET');
}

describe('a 206 the gateway did not ask for', () => {
  it('no Range sent, a 206 claiming bytes 1-100/100 whose body is an HTML page quoting the key: 502, none of it passed on', async () => {
    vendor.answer = partial(() => 'bytes 1-100/100', echoedPage);
    const r = await content();
    expect(vendor.seen[0]!.range).toBeUndefined();
    expectRefused(r, /without a Range/);
  });

  it('no Range sent, a 206 of the real video from byte 0: refused too (nothing was asked of a range)', async () => {
    vendor.answer = partial(() => `bytes 0-${mp4.length - 1}/${mp4.length}`, () => mp4, 'video/mp4');
    expectRefused(await content(), /without a Range/);
  });

  for (const [range, claimed, reason] of [
    // Not even a range of a 100-byte file (its last byte is 99).
    ['bytes=0-99', 'bytes 1-100/100', /malformed/],
    ['bytes=0-99', 'bytes 1-99/100', /starts elsewhere/],
    ['bytes=0-99', 'bytes 1000-1099/5000', /starts elsewhere/],
    ['bytes=1000-1999', 'bytes 2000-2999/5000', /starts elsewhere/],
    ['bytes=-100', 'bytes 0-99/5000', /starts elsewhere/],
    ['bytes=-100', 'bytes 4900-4999/*', /starts elsewhere/],
  ] as const) {
    it(`${range} answered with Content-Range ${claimed} (another start): 502, the page never reaches the client`, async () => {
      vendor.answer = partial(() => claimed, echoedPage);
      const r = await content({ range });
      expect(vendor.seen[0]!.range).toBe(range);
      expectRefused(r, reason);
    });
  }
});

describe('a Content-Range that is not one', () => {
  for (const claimed of [
    `bytes 5-9/Bearer ${UPSTREAM_KEY}`,
    `bytes 5-9/100 Bearer ${UPSTREAM_KEY}`,
    `Bearer ${UPSTREAM_KEY}`,
    'bytes 5-9',
    'bytes 9-5/100',
    'bytes 5-100/100',
    'bytes 5-9/9',
    'bytes */100',
    'bytes 5-9/100, bytes 5-9/100',
    'bytes 5.0-9/100',
    'bytes 5-99999999999999999999/*',
    'bytes -5-9/100',
    'items 5-9/100',
  ]) {
    it(`${JSON.stringify(claimed)} to bytes=5-9: 502, nothing of it quoted`, async () => {
      vendor.answer = partial(() => claimed, () => mp4.subarray(5, 10));
      expectRefused(await content({ range: 'bytes=5-9' }), /Content-Range/);
    });
  }

  it('a 206 with no Content-Range at all: 502', async () => {
    vendor.answer = (_req, res) => {
      res.writeHead(206, { 'content-type': 'video/mp4', 'content-length': '5' });
      res.end(mp4.subarray(5, 10));
    };
    expectRefused(await content({ range: 'bytes=5-9' }), /Content-Range/);
  });

  it('a Content-Length other than the range it names: 502', async () => {
    vendor.answer = partial(() => 'bytes 5-9/100', () => mp4.subarray(5, 50));
    expectRefused(await content({ range: 'bytes=5-9' }), /Content-Length/);
  });
});

describe('honest ranges', () => {
  for (const [range, answered, sent] of [
    ['bytes=5-9', 'bytes 5-9/*', 'bytes 5-9/*'],
    ['bytes=5-9', 'BYTES 5-9/' + mp4.length, `bytes 5-9/${mp4.length}`],
    ['bytes=0-99', `bytes 0-99/${mp4.length}`, `bytes 0-99/${mp4.length}`],
    ['bytes=1000-', `bytes 1000-${mp4.length - 1}/${mp4.length}`, `bytes 1000-${mp4.length - 1}/${mp4.length}`],
    ['bytes=-100', `bytes ${mp4.length - 100}-${mp4.length - 1}/${mp4.length}`, `bytes ${mp4.length - 100}-${mp4.length - 1}/${mp4.length}`],
    ['bytes=-100000000', `bytes 0-${mp4.length - 1}/${mp4.length}`, `bytes 0-${mp4.length - 1}/${mp4.length}`],
  ] as const) {
    it(`${range} answered ${answered}: 206 with Content-Range ${sent} and exactly those bytes`, async () => {
      vendor.answer = partial(
        () => answered,
        () => {
          const [, a, b] = /(\d+)-(\d+)/.exec(answered)!;
          return mp4.subarray(Number(a), Number(b) + 1);
        },
      );
      const r = await content({ range });
      expect(r.status, r.text).toBe(206);
      expect(r.headers.get('content-range')).toBe(sent);
      const [, a, b] = /(\d+)-(\d+)/.exec(sent)!;
      expect(r.headers.get('content-length')).toBe(String(Number(b) - Number(a) + 1));
      expect(r.bytes.equals(mp4.subarray(Number(a), Number(b) + 1))).toBe(true);
      expect(lines.filter((l) => l.includes('not the media asked for'))).toEqual([]);
    });
  }

  it('a 206 without Content-Length carries no more than the range it names', async () => {
    vendor.answer = partial(() => `bytes 0-99/${mp4.length}`, () => mp4, 'video/mp4', false);
    const r = await content({ range: 'bytes=0-99' });
    expect(r.status).toBe(206);
    expect(r.headers.get('content-range')).toBe(`bytes 0-99/${mp4.length}`);
    expect(r.bytes.equals(mp4.subarray(0, 100))).toBe(true);
  });

  it('several ranges or a malformed Range are not sent on: the vendor answers whole, the client gets the whole video', async () => {
    vendor.answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(mp4.length) });
      res.end(mp4);
    };
    for (const range of ['bytes=0-1,5-9', 'bytes=abc', 'items=0-1']) {
      const r = await content({ range });
      expect(r.status, range).toBe(200);
      expect(r.bytes.equals(mp4), range).toBe(true);
    }
    expect(vendor.seen.map((s) => s.range)).toEqual([undefined, undefined, undefined]);
  });
});
