import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { call, type TestGateway } from '../helpers/gateway.js';
import { completedJobBehindVendor, type ContentAnswer, type ContentSetup, type ContentVendor } from './content-vendor.js';

/**
 * A vendor whose content endpoint answers with something other than the video: an HTML page or a
 * JSON error that quotes the credentials the gateway sent it, under a document type or under
 * `application/octet-stream`. The gateway serves the download under the job's video type, so such
 * an answer must become the documented upstream error before any of it reaches the client; a real
 * video under a generic type, and ranges of it, still stream.
 */

/** The upstream key the operator configured; a hostile vendor echoes what it is sent. */
const UPSTREAM_KEY = 'sk-upstreamSECRET-0123456789abcdef';

type Answer = ContentAnswer;

/** Answers `body` whole, whatever the Range header says. */
const whole =
  (type: string | undefined, body: Buffer | string, status = 200): Answer =>
  (_req, res) => {
    res.writeHead(status, { ...(type ? { 'content-type': type } : {}), 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  };

/** Honours a single `bytes=a-b` range of `body` (206 with Content-Range), as storage does. */
const ranged =
  (type: string, body: Buffer): Answer =>
  (req, res) => {
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!m) return whole(type, body)(req, res);
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), body.length - 1);
    res.writeHead(206, { 'content-type': type, 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': String(end - start + 1) });
    res.end(body.subarray(start, end + 1));
  };

/** An error page that quotes the request's credentials, as a misconfigured proxy's debug page does. */
const echoingPage: (type: string) => Answer = (type) => (req, res) => whole(type, `<html><body>denied: ${req.headers.authorization}</body></html>`)(req, res);
const echoingJson: (type: string) => Answer = (type) => (req, res) => whole(type, JSON.stringify({ error: { message: `bad key ${req.headers.authorization}` } }))(req, res);

let setup: ContentSetup;
let vendor: ContentVendor;
let gw: TestGateway;
let key: string;
let account: string;
let job: string;
let lines: string[];

beforeAll(async () => {
  setup = await completedJobBehindVendor({ upstreamKey: UPSTREAM_KEY });
  ({ vendor, gw, key, account, job, lines } = setup);
}, 30_000);

afterAll(async () => {
  await setup?.close();
});

beforeEach(() => {
  vendor.answer = whole('video/mp4', sampleMp4());
  vendor.seen.length = 0;
  lines.length = 0;
});

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer; text: string }> {
  const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes, text: bytes.toString('latin1') };
}
const content = (headers: Record<string, string> = {}) => get(`/v1/videos/${job}/content`, headers);

/** The documented answer to a vendor that failed the download: 502 upstream_error, quoting nothing of the vendor's body. */
function expectRefused(r: { status: number; headers: Headers; text: string }): void {
  expect(r.status).toBe(502);
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(r.text);
  expect(body.error.type).toBe('server_error');
  expect(body.error.code).toBe('upstream_error');
  expect(r.text).not.toContain('upstreamSECRET');
  expect(r.text).not.toMatch(/html|denied|bad key/i);
}

/** The operator hears of it once, with no credential and nothing of the body in the line. */
function expectLoggedRefusal(reason: RegExp): void {
  const refusals = lines.filter((l) => l.includes('not the media asked for')).map((l) => JSON.parse(l));
  expect(refusals).toHaveLength(1);
  expect(refusals[0].reason).toMatch(reason);
  for (const l of lines) expect(l).not.toMatch(/upstreamSECRET|denied|bad key/);
}

describe('a vendor answering the video download with something that is not the video', () => {
  it('an HTML page under text/html quoting the upstream key: 502 upstream_error, never the key, never a 200; the job stays completed and billed', async () => {
    const balance = await gw.balance(account);
    vendor.answer = echoingPage('text/html; charset=utf-8');
    const r = await content();
    // The vendor did get the operator's key (and put it in its page).
    expect(vendor.seen[0]!.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expectRefused(r);
    expectLoggedRefusal(/document type/);
    const after = await call(gw, 'GET', `/v1/videos/${job}`, { key });
    expect(after.json.status).toBe('completed');
    expect(await gw.balance(account)).toBe(balance);
  });

  for (const type of ['application/octet-stream', 'binary/octet-stream', undefined]) {
    it(`under ${type ?? 'no content type'}: a real MP4 streams whole as the job's video type, a JSON error is refused by its first bytes`, async () => {
      vendor.answer = whole(type, sampleMp4());
      const r = await content();
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('video/mp4');
      expect(r.bytes.equals(sampleMp4())).toBe(true);
      expect(lines.filter((l) => l.includes('not the media asked for'))).toEqual([]);

      vendor.answer = echoingJson(type ?? '');
      expectRefused(await content());
      expectLoggedRefusal(/first bytes/);
    });
  }
});

describe('a container that opens with a box too small to be one', () => {
  it('an 8-byte ftyp box followed by an HTML page quoting the upstream key: refused by its first bytes, as the page alone is', async () => {
    const tinyFtyp = Buffer.from('00000008667479703c68746d', 'hex').subarray(0, 8);
    vendor.answer = (req, res) => whole('application/octet-stream', Buffer.concat([tinyFtyp, Buffer.from(`<html><body>denied: ${req.headers.authorization}</body></html>`)]))(req, res);
    expectRefused(await content());
    expectLoggedRefusal(/first bytes/);
  });
});

describe('a container that opens with a media or movie box header and no movie', () => {
  for (const t of ['mdat', 'moov']) {
    it(`an 8-byte ${t} header followed by an HTML page quoting the upstream key: refused by its first bytes`, async () => {
      vendor.answer = (req, res) => {
        const page = Buffer.from(`<html><body>denied: ${req.headers.authorization}</body></html>`);
        const header = Buffer.alloc(8);
        header.writeUInt32BE(8 + page.length);
        header.write(t, 4, 'latin1');
        whole('application/octet-stream', Buffer.concat([header, page]))(req, res);
      };
      expectRefused(await content());
      expectLoggedRefusal(/first bytes/);
    });
  }
});

describe('a container that opens with a filler box', () => {
  for (const t of ['free', 'skip', 'wide']) {
    it(`an 8-byte ${t} box followed by an HTML page quoting the upstream key: refused; followed by a real MP4: streamed`, async () => {
      const filler = Buffer.concat([Buffer.from([0, 0, 0, 8]), Buffer.from(t)]);
      vendor.answer = (req, res) => whole('application/octet-stream', Buffer.concat([filler, Buffer.from(`<html><body>denied: ${req.headers.authorization}</body></html>`)]))(req, res);
      expectRefused(await content());
      expectLoggedRefusal(/first bytes/);

      const video = Buffer.concat([filler, sampleMp4()]);
      vendor.answer = whole('application/octet-stream', video);
      const r = await content();
      expect(r.status).toBe(200);
      expect(r.bytes.equals(video)).toBe(true);
    });
  }
});

describe('ranges', () => {
  const mp4 = sampleMp4();

  for (const [range, start, end] of [
    ['bytes=0-99', 0, 99],
    ['bytes=0-1', 0, 1],
    ['bytes=1000-1999', 1000, 1999],
  ] as const) {
    it(`${range}: a vendor that honours it streams the slice; its HTML page in the slice's place is refused`, async () => {
      vendor.answer = ranged('application/octet-stream', mp4);
      const r = await content({ range });
      expect(r.status).toBe(206);
      expect(r.headers.get('content-range')).toBe(`bytes ${start}-${end}/${mp4.length}`);
      expect(r.bytes.equals(mp4.subarray(start, end + 1))).toBe(true);
      expect(vendor.seen.at(-1)!.range).toBe(range);

      vendor.answer = (req, res) => ranged('text/html', Buffer.from(`<html>${req.headers.authorization}${' '.repeat(4000)}</html>`))(req, res);
      expectRefused(await content({ range }));
    });
  }

  it('a vendor that ignores Range: the slice is cut from a checked body; a JSON body under octet-stream is refused', async () => {
    vendor.answer = whole('application/octet-stream', mp4);
    const r = await content({ range: 'bytes=1000-1999' });
    expect(r.status).toBe(206);
    expect(r.bytes.equals(mp4.subarray(1000, 2000))).toBe(true);

    // Byte 1000 on of the vendor's answer is not where the check looks: its first bytes are.
    vendor.answer = (req, res) => whole('application/octet-stream', JSON.stringify({ pad: 'x'.repeat(3000), error: `bad key ${req.headers.authorization}` }))(req, res);
    expectRefused(await content({ range: 'bytes=1000-1999' }));
  });

  it('a range from the first byte whose bytes are a JSON error under octet-stream: refused', async () => {
    vendor.answer = (req, res) => ranged('application/octet-stream', Buffer.from(`{"error":"bad key ${req.headers.authorization}"}${' '.repeat(200)}`))(req, res);
    expectRefused(await content({ range: 'bytes=0-99' }));
  });
});

describe('preview images', () => {
  it('a thumbnail declared image/png whose bytes are an HTML page is refused; a real PNG is served', async () => {
    vendor.answer = echoingPage('image/png');
    expectRefused(await get(`/v1/videos/${job}/content?variant=thumbnail`));
    expectLoggedRefusal(/image/);

    vendor.answer = whole('image/png', samplePng());
    const r = await get(`/v1/videos/${job}/content?variant=thumbnail`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('image/png');
    expect(r.bytes.equals(samplePng())).toBe(true);
  });
});
