import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discard, guard, pipeThrough } from '../../src/http/streams.js';

/** The stream helpers every I/O edge goes through. */
const closeOf = (s: NodeJS.EventEmitter) => new Promise((r) => s.once('close', r));
let server: Server;
let url: string;
let closed = 0;

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.on('close', () => closed++);
    res.writeHead(200, { 'content-length': String(1024 * 1024) });
    res.write(Buffer.alloc(1024));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('stream helpers', () => {
  it('discard: an unread upstream body is thrown away without an uncaught error, and its connection closes', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      const before = closed;
      const res = await request(url);
      // undici emits RequestAbortedError for a body destroyed before its end: the reported crash.
      discard(res.body);
      discard(res.body); // twice is fine too
      await new Promise((r) => setTimeout(r, 50));
      expect(uncaught).toEqual([]);
      expect(res.body.destroyed).toBe(true);
      // A connection closes asynchronously; a busy machine may take more than expect.poll's default second.
      await expect.poll(() => closed, { timeout: 10_000 }).toBe(before + 1);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('guard hides nothing: a consumer still sees the error', async () => {
    const s = guard(new PassThrough());
    s.destroy(new Error('upstream reset'));
    await expect((async () => {
      for await (const _ of s) void _;
    })()).rejects.toThrow('upstream reset');
  });

  it('pipeThrough: a failing source ends the output with its error', async () => {
    const source = new PassThrough();
    const out = pipeThrough(source, new PassThrough());
    source.destroy(new Error('mid-body reset'));
    await closeOf(out);
    expect(out.errored?.message).toBe('mid-body reset');
  });

  it('pipeThrough: an output closed early (the client left) releases the source', async () => {
    const source = Readable.from((async function* () {
      for (;;) {
        yield Buffer.alloc(1024);
        await new Promise((r) => setTimeout(r, 5));
      }
    })());
    const out = pipeThrough(source, new PassThrough());
    out.destroy();
    await closeOf(source);
    expect(source.destroyed).toBe(true);
  });
});
