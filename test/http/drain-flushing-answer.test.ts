import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { closeListener } from '../../src/http/close-listener.js';
import { keepFlushingAnswers } from '../../src/http/flushing-answers.js';

const SIZE = 48 * 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close().catch(() => undefined);
  app = undefined;
});

/** An app answering one large body, whose end() is called at once (the body is one Buffer). */
async function bigAnswerApp(guarded: boolean): Promise<{ url: string; ended: Promise<void> }> {
  app = Fastify();
  if (guarded) keepFlushingAnswers(app.server);
  let markEnded!: () => void;
  const ended = new Promise<void>((r) => (markEnded = r));
  app.get('/big', (_req, reply) => {
    reply.raw.once('prefinish', markEnded);
    return reply.header('content-type', 'application/octet-stream').send(Buffer.alloc(SIZE, 0x61));
  });
  app.get('/small', () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, ended };
}

/** Reads /big slowly: nothing until `go` resolves, then everything; the byte count and how it ended. */
function slowRead(url: string, go: Promise<void>): Promise<{ bytes: number; complete: boolean }> {
  return new Promise((resolve) => {
    const req = http.get(`${url}/big`, (res) => {
      res.pause();
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ bytes, complete: res.complete }));
      res.on('aborted', () => resolve({ bytes, complete: false }));
      res.on('error', () => resolve({ bytes, complete: false }));
      void go.then(() => res.resume());
    });
    req.on('error', () => resolve({ bytes: -1, complete: false }));
  });
}

describe('a drain and an answer still being written', () => {
  it('lets a large answer whose end() was called reach a slow reader whole before the connection closes', async () => {
    const { url, ended } = await bigAnswerApp(true);
    let start!: () => void;
    const go = new Promise<void>((r) => (start = r));
    const read = slowRead(url, go);
    await ended;
    // The drain starts while most of the body waits in the socket's buffers; the reader resumes later.
    const closing = closeListener(app!);
    await sleep(350);
    start();
    const got = await read;
    await closing;
    expect(got).toEqual({ bytes: SIZE, complete: true });
  });

  it('still closes an idle keep-alive connection at once', async () => {
    const { url } = await bigAnswerApp(true);
    const agent = new http.Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) =>
      http.get(`${url}/small`, { agent }, (res) => res.resume().on('end', resolve)).on('error', reject),
    );
    const t0 = Date.now();
    await closeListener(app!);
    // Node's keep-alive timeout (72 s in Fastify) would otherwise hold the close.
    expect(Date.now() - t0).toBeLessThan(5_000);
    agent.destroy();
  });
});
