import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Streaming chat completions in front of an upstream that misbehaves in ways the simulator does not:
 * a raw HTTP server on loopback whose answer each test writes by hand.
 */
let upstream: Server;
let gw: TestGateway;
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
let requests = 0;

const UPSTREAM_KEY = 'sk-upstream-secret-0123456789';

beforeAll(async () => {
  upstream = createServer((req, res) => {
    requests++;
    req.resume();
    answer(req, res);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const { port } = upstream.address() as { port: number };
  gw = await startTestGateway({
    upstreams: [{ name: 'raw', vendor: 'openai', base_url: `http://127.0.0.1:${port}`, api_key: UPSTREAM_KEY, models: ['gpt-4o'], timeout_ms: 500 }],
    models: { 'gpt-4o': { capabilities: ['chat'], price: { per_million_input_tokens: 1, per_million_output_tokens: 4 } } },
  });
});

afterAll(async () => {
  await gw?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })}\n\n`;

function sse(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(body);
}

async function streamChat(key: string): Promise<{ status: number; contentType: string | null; text: string }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, contentType: res.headers.get('content-type'), text: await res.text() };
}

describe('a streaming upstream that echoes its own key', () => {
  it('never passes the configured key on, even in an event without an error field', async () => {
    const { key } = await gw.newKey(10);
    answer = (_req, res) => sse(res, chunk('a') + `data: {"message":"Incorrect API key provided: ${UPSTREAM_KEY}"}\n\n` + 'data: [DONE]\n\n');
    const out = await streamChat(key);
    expect(out.status).toBe(200);
    expect(out.text).toContain(chunk('a'));
    expect(out.text).not.toContain(UPSTREAM_KEY);
    expect(out.text).toContain('[redacted]');
  });
});

describe('a streaming request answered with something other than a stream', () => {
  it('is an upstream failure (502 in the error shape), not relayed and not charged', async () => {
    const { key, account } = await gw.newKey(10);
    const before = await gw.balance(account);
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body>Proxy login required</body></html>');
    };
    const out = await streamChat(key);
    expect(out.status).toBe(502);
    expect(out.contentType).toMatch(/application\/json/);
    expect(JSON.parse(out.text).error).toMatchObject({ type: 'server_error' });
    expect(out.text).not.toContain('Proxy login');
    expect(await gw.balance(account)).toBe(before);
  });

  it('still takes a stream whose type is not said', async () => {
    const { key } = await gw.newKey(10);
    answer = (_req, res) => {
      res.removeHeader('content-type');
      res.writeHead(200);
      res.end(chunk('ok') + 'data: [DONE]\n\n');
    };
    const out = await streamChat(key);
    expect(out.status).toBe(200);
    expect(out.text).toContain(chunk('ok'));
  });
});

describe('a client that stops reading a stream', () => {
  it('is cut after the stall timeout: the upstream stream is cancelled and what went out is billed once', async () => {
    const { key, account } = await gw.newKey(10);
    const before = await gw.balance(account);
    let upstreamClosed = false;
    answer = async (_req, res) => {
      res.on('close', () => (upstreamClosed = true));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Far more than the sockets between here and the client can buffer.
      for (let i = 0; i < 100_000 && !res.destroyed; i++) {
        if (res.write(chunk('x'.repeat(1000)))) continue;
        // One listener of each at a time: a wait's leftover 'close' listener would pile up across drains.
        await new Promise<void>((r) => {
          const done = (): void => (res.off('drain', done), res.off('close', done), r());
          res.once('drain', done);
          res.once('close', done);
        });
      }
      if (!res.destroyed) res.end('data: [DONE]\n\n');
    };
    const body = JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const client = connect(Number(new URL(gw.url).port), '127.0.0.1');
    let clientClosed = false;
    client.on('close', () => (clientClosed = true));
    client.on('error', () => undefined);
    client.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // Never reads a byte of the answer.
    client.pause();
    try {
      // The stall bound is twice the upstream's timeout_ms (500 ms here).
      for (let i = 0; i < 100 && !upstreamClosed; i++) await new Promise((r) => setTimeout(r, 50));
      expect(upstreamClosed).toBe(true);
      // The gateway closed the connection: reading what it had buffered reaches the end.
      client.resume();
      for (let i = 0; i < 100 && !clientClosed; i++) await new Promise((r) => setTimeout(r, 20));
      expect(clientClosed).toBe(true);
    } finally {
      client.destroy();
    }
    let charges: unknown[] = [];
    for (let i = 0; i < 50 && charges.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const a = await gw.services.store.getAccountByName(account);
      charges = (await gw.services.store.listLedger(a!.id)).filter((e) => e.kind === 'charge');
    }
    expect(charges).toHaveLength(1);
    expect(await gw.balance(account)).toBeLessThan(before);
  });
});
