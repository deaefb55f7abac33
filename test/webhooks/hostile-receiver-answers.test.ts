import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { enqueueVideoEvent } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { newSecret } from '../../src/webhooks/signing.js';
import { makeAccount, sqliteBackend, type Backend } from '../store/harness.js';
import { listenOnLoopback, shutReceiver } from './receiver.js';

/**
 * Receivers that answer in hostile ways, written byte by byte: each attempt ends by its deadline,
 * is recorded with a reason (never the receiver's own words), and nothing it says is followed.
 */
let elsewhereHits = 0;
const elsewhere = createHttpServer((_req, res) => {
  elsewhereHits++;
  res.end();
});
let elsewhereUrl = '';

const answers: Record<string, (s: Socket) => void> = {
  redirect: (s) => s.end(`HTTP/1.1 307 Temporary Redirect\r\nlocation: ${elsewhereUrl}/taken\r\ncontent-length: 0\r\n\r\n`),
  'huge-headers': (s) => s.end(`HTTP/1.1 200 OK\r\nx-a: ${'a'.repeat(200_000)}\r\n\r\n`),
  garbage: (s) => s.end('not http at all\r\n\r\n'),
  'endless-1xx': (s) => {
    const t = setInterval(() => s.write('HTTP/1.1 102 Processing\r\n\r\n'), 30);
    s.on('close', () => clearInterval(t));
  },
  'status-trickle': (s) => {
    const head = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n';
    let i = 0;
    const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write(head[i++ % head.length]!)), 100);
    s.on('close', () => clearInterval(t));
  },
  'short-body': (s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc'),
  upgrade: (s) => s.end('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n'),
};
const receiver = createServer((s) => {
  let head = '';
  let answered = false;
  s.on('error', () => undefined);
  s.on('data', (c: Buffer) => {
    head += c.toString('latin1');
    const mode = /^POST \/([\w-]+)/.exec(head)?.[1];
    if (answered || !mode || !head.includes('\r\n\r\n')) return;
    answered = true;
    answers[mode]!(s);
  });
});

describe('hostile receiver answers', () => {
  let backend: Backend;
  let base = '';
  beforeAll(async () => {
    backend = sqliteBackend();
    elsewhereUrl = await listenOnLoopback(elsewhere);
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await backend.dispose();
    await shutReceiver(elsewhere);
    await new Promise((r) => receiver.close(r));
  });

  it('each attempt ends by its deadline with a reason; a redirect is never followed', async () => {
    const { store } = await backend.fresh();
    const account = await makeAccount(store);
    await store.createWebhookEndpoint({ id: `we_${randomUUID().replace(/-/g, '')}`, accountId: account.id, url: `${elsewhereUrl}/endpoint`, events: ['video.failed'], secret: newSecret(), createdAt: Date.now() });
    for (const mode of Object.keys(answers))
      await enqueueVideoEvent(store.driver, { accountId: account.id, type: 'video.completed', videoId: `vid_${mode}`, webhookUrl: `${base}/${mode}`, now: Date.now() });
    // Short enough that the trickled status line (one byte every 100 ms, 3.8 s) is cut, long enough that
    // an answer sent at once arrives first on a busy machine.
    const timeoutMs = 1_500;
    const d = new WebhookDispatcher(
      store,
      systemClock,
      { intervalMs: 0, concurrency: 16, perAccountConcurrency: 16, perOriginConcurrency: 16, timeoutMs, leaseMs: 60_000, retryBaseMs: 60_000, maxDelayMs: 60_000, maxAttempts: 1, allowPrivateNetworks: true },
      { warn: () => undefined },
    );
    try {
      const end = Date.now() + 10_000;
      while ((await store.listOutbox({ accountId: account.id, limit: 20 })).some((r) => r.state === 'pending') && Date.now() < end) {
        await d.tick();
        await new Promise((r) => setTimeout(r, 30));
      }
    } finally {
      await d.stop();
    }
    const got: Record<string, [string, number | null, string | null]> = {};
    for (const row of await store.listOutbox({ accountId: account.id, limit: 20 })) {
      const [a] = await store.listDeliveryAttempts({ outboxId: row.id });
      got[row.url.slice(base.length + 1)] = [row.state, a!.status, a!.error?.replace(/ \(\w+\)$/, '') ?? null];
    }
    expect(got).toEqual({
      redirect: ['failed', 307, 'redirects are not followed'],
      'huge-headers': ['failed', null, 'connection failed'],
      garbage: ['failed', null, 'connection failed'],
      'endless-1xx': ['failed', null, `no answer within ${timeoutMs} ms`],
      'status-trickle': ['failed', null, `no answer within ${timeoutMs} ms`],
      'short-body': ['failed', 200, 'the connection broke before the answer ended'],
      upgrade: ['failed', null, 'connection failed'],
    });
    expect(elsewhereHits).toBe(0);
  });
});
