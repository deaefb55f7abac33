import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localServer, spawnCli, STACK, type LocalServer } from './spawn.js';

/** Answers a client command must survive: bodies too large to hold, text meant for the terminal. */
const MiB = 1024 * 1024;
/** Control characters a terminal would act on: C0 but newline and tab, DEL, C1. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const HOSTILE = 'bad \u001b[31mred\u001b[0m input\u001b]0;pwned\u0007 \u009b2Jcleared \u001b]8;;http://x\u001b\\link';

let api: LocalServer;

/** Valid JSON of about `size` bytes, written in pieces with backpressure and without a Content-Length. */
async function bigJson(res: ServerResponse, size: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"id":"v","status":"completed","pad":"');
  const piece = Buffer.alloc(MiB, 'x');
  for (let sent = 0; sent < size && !res.destroyed; sent += piece.length) {
    if (!res.write(piece)) await new Promise((r) => res.once('drain', r).once('close', r));
  }
  res.end('"}');
}

beforeAll(async () => {
  api = await localServer((req, res) => {
    const url = req.url ?? '';
    if (url === '/v1/videos/big') return void bigJson(res, 70 * MiB);
    if (url === '/v1/videos/declared') {
      // Announces 100 MiB and sends almost nothing: nothing needs to be read to refuse it.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(100 * MiB) });
      return res.write('{"id":');
    }
    if (url === '/v1/videos/shown') {
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'shown', status: `completed${HOSTILE}`, model: 'm\u0085\u009b31m' }));
    }
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'invalid_request_error', message: HOSTILE, code: 'c\u001b[5m' } }));
  });
});
afterAll(async () => {
  await api?.close();
});

const client = (...args: string[]) => spawnCli([...args, '--url', api.url, '--key', 'k']);

describe('JSON answers are bounded', () => {
  it('a 70 MiB answer is refused past 64 MiB with one line, exit 1', async () => {
    const r = await client('video', 'get', 'big');
    expect(r.err).not.toMatch(STACK);
    expect(r.err).toBe("error: GET /v1/videos/big: the gateway's answer is larger than 64 MiB; not reading it\n");
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
  }, 60_000);

  it('an answer that declares more than 64 MiB is refused before it is read', async () => {
    const r = await client('video', 'get', 'declared');
    expect(r.err).toBe("error: GET /v1/videos/declared: the gateway's answer is larger than 64 MiB; not reading it\n");
    expect(r.code).toBe(1);
  }, 20_000);
});

describe('text from the server reaches the terminal without control characters', () => {
  it("an upstream's error message relayed by the gateway: escape sequences removed, the words kept", async () => {
    const r = await client('embed', '--model', 'emb', 'hi');
    expect(r.code).toBe(2);
    expect(r.err).not.toMatch(RAW_CONTROL);
    expect(r.err).not.toMatch(/\[31m|\]0;|pwned|\[5m/);
    expect(r.err).toMatch(/^error: 400 invalid_request_error: bad red input [^\n]*cleared link \(c\)\n$/);
  }, 20_000);

  it('a job shown as text, and as --json (C1 escaped, the same values once parsed)', async () => {
    const text = await client('video', 'get', 'shown');
    expect(text.code, text.err).toBe(0);
    expect(text.out).not.toMatch(RAW_CONTROL);
    expect(text.out).toContain('status: completedbad red input');
    const json = await client('video', 'get', 'shown', '--json');
    expect(json.code, json.err).toBe(0);
    expect(json.out).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(json.out)).toMatchObject({ status: `completed${HOSTILE}`, model: 'm\u0085\u009b31m' });
  }, 20_000);
});
