import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { installRequestLifecycle } from '../../src/http/lifecycle.js';
import { AccessLog } from '../../src/ops/request-logger.js';

/**
 * A request whose client hangs up before its answer is complete used to leave no access line at
 * all (Fastify writes one only when the answer finishes), though it may have cost upstream work.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function start(): Promise<{ url: string; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const logger = pino({ level: 'info', base: null, timestamp: false }, sink) as unknown as FastifyBaseLogger;
  const accessLog = new AccessLog(logger);
  app = Fastify({ loggerInstance: logger, logController: accessLog });
  installRequestLifecycle(app, 60_000, (reply) => accessLog.requestAborted(reply));
  // Waits for its client to leave, then answers anyway (as a route finishing its upstream call would).
  app.get('/slow', async (req) => {
    await new Promise<void>((resolve) => req.callSignal.addEventListener('abort', () => resolve()));
    await sleep(20);
    return { late: true };
  });
  app.get('/stream', (_req, reply) => {
    reply.raw.writeHead(200, { 'content-type': 'text/plain' });
    reply.raw.write('first part\n');
    reply.hijack();
  });
  app.get('/fast', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, lines };
}

function hangUp(url: string, afterMs: number, onHeaders = false): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      if (onHeaders) res.once('data', () => req.destroy());
    });
    req.on('error', () => undefined);
    req.on('close', () => resolve());
    if (!onHeaders) setTimeout(() => req.destroy(), afterMs);
  });
}

describe('the access line of a request whose client left', () => {
  it('is written once, as aborted with status 499, when nothing was sent', async () => {
    const { url, lines } = await start();
    await hangUp(`${url}/slow`, 100);
    await sleep(200);
    const mine = lines.filter((l) => l.path === '/slow');
    expect(mine).toEqual([{ level: 30, request_id: expect.any(String), method: 'GET', path: '/slow', status: 499, ms: expect.any(Number), aborted: true, msg: 'request aborted' }]);
    expect(mine[0]!.ms).toBeGreaterThanOrEqual(90);
  });

  it('names the status being sent when the answer had begun', async () => {
    const { url, lines } = await start();
    await hangUp(`${url}/stream`, 0, true);
    await sleep(200);
    expect(lines.filter((l) => l.path === '/stream')).toEqual([expect.objectContaining({ status: 200, aborted: true, msg: 'request aborted' })]);
  });

  it('a request answered whole keeps its one "request completed" line', async () => {
    const { url, lines } = await start();
    await new Promise<void>((resolve) => http.get(`${url}/fast`, (res) => res.resume().on('end', () => resolve())));
    await sleep(50);
    expect(lines.filter((l) => l.path === '/fast')).toEqual([{ level: 30, request_id: expect.any(String), method: 'GET', path: '/fast', status: 200, ms: expect.any(Number), msg: 'request completed' }]);
  });
});
