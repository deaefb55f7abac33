import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { longestLoopHold } from '../helpers/loop-gap.js';
import { wideJson } from '../helpers/wide-json.js';

/**
 * A chat upstream that answers an error with tens of megabytes: an error envelope is a few hundred
 * bytes, so a larger error answer is classified by its status alone and never parsed. Parsed whole,
 * 60 MB of small JSON fields held the event loop for seconds. A raw HTTP server on loopback.
 */
let upstream: Server;
let gw: TestGateway;
let body: Buffer = Buffer.alloc(0);
let status = 400;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const { port } = upstream.address() as { port: number };
  gw = await startTestGateway({
    upstreams: [{ name: 'raw', vendor: 'openai', base_url: `http://127.0.0.1:${port}`, api_key: 'sk-upstream-secret-0123456789', models: ['gpt-4o'], timeout_ms: 5_000 }],
    models: { 'gpt-4o': { capabilities: ['chat'], price: { per_million_input_tokens: 1, per_million_output_tokens: 4 } } },
  });
}, 30_000);

afterAll(async () => {
  await gw?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

describe('a chat error answer of 60 MB', () => {
  it('is classified by its status without being parsed: the client error, nothing charged, no long hold', async () => {
    const { key, account } = await gw.newKey(10);
    status = 400;
    body = Buffer.from(`{"error":{"message":"bad request","type":"invalid_request_error","pad":${wideJson(60 * 1024 * 1024)}}}`);
    const { value: res, maxMs } = await longestLoopHold(async () => {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
      });
      return { status: r.status, json: (await r.json()) as any };
    });
    console.log(`longest event-loop hold, chat error answer of 60 MB: ${maxMs.toFixed(1)} ms`);
    expect(maxMs).toBeLessThan(1_000);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('upstream_rejected');
    expect(res.json.error.message).toBe('The upstream answered 400.');
    expect(await gw.balance(account)).toBe(10_000_000);
  });

  it('a small error answer is still read for its message', async () => {
    const { key } = await gw.newKey(10);
    status = 400;
    body = Buffer.from(JSON.stringify({ error: { message: 'max_tokens is too large', type: 'invalid_request_error', param: 'max_tokens' } }));
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const json = (await r.json()) as any;
    expect(r.status).toBe(400);
    expect(json.error.message).toBe('max_tokens is too large');
    expect(json.error.param).toBe('max_tokens');
  });
});
