import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * The embeddings request's abort reaches its upstream call (the route hands the request's own
 * CallSignal down, no AbortController): a client that hangs up, or a request past its deadline,
 * closes the upstream request before it is answered, and nothing is charged. The upstream here
 * never answers on its own, so only the gateway's abort can end its request.
 */
let upstream: Server;
/** Deadline 60 s: only a hang-up can end its requests within the test. */
let gw: TestGateway;
/** Deadline 300 ms. */
let quick: TestGateway;
let key: string;
let account: string;
let quickKey: string;
/** Upstream requests received, and whether their connection closed before an answer. */
let seen: { req: IncomingMessage; res: ServerResponse; closed: boolean }[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const entry = { req, res, closed: false };
    seen.push(entry);
    req.resume();
    res.on('close', () => (entry.closed = !res.writableFinished));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const start = (deadlineMs: number) =>
    startTestGateway({
      server: { request_timeout_ms: deadlineMs },
      upstreams: [{ name: 'silent', vendor: 'openai', base_url: base, api_key: 'sk-test-silent', models: ['emb'], priority: 1, timeout_ms: 30_000 }],
      models: { emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } } },
    });
  gw = await start(60_000);
  quick = await start(300);
  ({ key, account } = await gw.newKey(10));
  ({ key: quickKey } = await quick.newKey(10));
});
afterAll(async () => {
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await gw?.close();
  await quick?.close();
});
beforeEach(() => {
  seen = [];
});

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check(), what).toBe(true);
}

const charges = async () => (await gw.services.store.listLedger(account)).filter((e) => e.kind === 'charge');

describe('an embeddings request that ends before its answer', () => {
  it('a client that hangs up closes the upstream call at once and is not charged', async () => {
    const body = JSON.stringify({ model: 'emb', input: 'hello' });
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`POST /v1/embeddings HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    await until(() => seen.length === 1, 'the upstream call started');
    expect(seen[0]!.closed).toBe(false);
    socket.destroy();
    await until(() => seen[0]!.closed, 'the upstream call closed after the hang-up');
    expect(await charges()).toHaveLength(0);
  });

  it('a request past its deadline gets 408 and its upstream call is closed', async () => {
    const r = await fetch(`${quick.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${quickKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'emb', input: 'hello' }),
    });
    expect(r.status).toBe(408);
    await until(() => seen.length === 1 && seen[0]!.closed, 'the upstream call closed at the deadline');
  });
});
