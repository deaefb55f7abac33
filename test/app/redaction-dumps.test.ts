import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hexdumpC, xxd } from '../helpers/dumps.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * An upstream (a raw HTTP server on loopback) behind a debugging proxy that answers an error with a
 * hex dump of the request it received, Authorization header included: the key's hex cut into groups
 * and lines, its characters split across the character column. No part of it may reach the client
 * or the log. The key has no credential shape, so only the configured value can tell it.
 */
const KEY = 'Zq8Wm3RtPv7Lx2Nc9Hb4Kd6Jf0Gy5Ts';
const HEX = Buffer.from(KEY).toString('hex');

let upstream: Server;
let gw: TestGateway;
let key: string;
const logLines: string[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();

/** What the proxy says: the head of the request it received, dumped. */
function dumped(req: IncomingMessage, dump: (b: Buffer) => string): string {
  const head = `${req.method} ${req.url} HTTP/1.1\r\nAuthorization: ${req.headers.authorization}\r\n\r\n`;
  return `request rejected by proxy; dump:\n${dump(Buffer.from(head))}`;
}

/** No run of six characters of the key, nor twelve digits of its hex, whatever spacing and line breaks cut them. */
function expectNone(text: string): void {
  const digits = text.replace(/[^0-9a-f]/gi, '').toLowerCase();
  const squeezed = text.replace(/\s|\\n|\|/g, '');
  for (let i = 0; i + 12 <= HEX.length; i += 2) expect(digits, HEX.slice(i, i + 12)).not.toContain(HEX.slice(i, i + 12));
  for (let i = 0; i + 6 <= KEY.length; i++) expect(squeezed, KEY.slice(i, i + 6)).not.toContain(KEY.slice(i, i + 6));
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as { port: number }).port;
  gw = await startTestGateway(
    {
      upstreams: [{ name: 'raw', vendor: 'openai', base_url: `http://127.0.0.1:${port}`, api_key: KEY, models: ['emb', 'gpt-4o'], timeout_ms: 2_000 }],
      models: {
        emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } },
        'gpt-4o': { capabilities: ['chat'], price: { per_million_input_tokens: 1, per_million_output_tokens: 4 } },
      },
      log_level: 'debug',
    },
    { logSink: { write: (line: string) => void logLines.push(line) } },
  );
  ({ key } = await gw.newKey(10));
});

afterAll(async () => {
  await gw?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

describe('an upstream error quoting a hex dump of the request', () => {
  it.each([
    ['xxd', (b: Buffer) => xxd(b)],
    ['xxd -g1', (b: Buffer) => xxd(b, 1)],
    ['hexdump -C', hexdumpC],
  ])('reaches the client without the key (%s)', async (_tool, dump) => {
    answer = (req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: dumped(req, dump), type: 'invalid_request_error' } }));
    };
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: 'hello' } });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('upstream_rejected');
    const message: string = r.json.error.message;
    // Still a dump the client can read: its lines, and the bytes before the key.
    expect(message).toContain('POST /v1/embeddi');
    expect(message.split('\n').length).toBeGreaterThan(4);
    expect(message).toContain('[redacted]');
    expectNone(r.text);
  });

  it('reaches the client without the key where the message is cut inside the dump', async () => {
    answer = (req, res) => {
      const dump = dumped(req, (b) => xxd(b));
      // The gateway keeps 500 characters of a message: the cut falls six groups into the fourth line, after eight bytes of the key.
      const fourth = dump.indexOf('00000030: ');
      const filler = `${'x'.repeat(500 - (fourth + 10 + 6 * 5 - 1) - 1)}\n`;
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `${filler}${dump}`, type: 'invalid_request_error' } }));
    };
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: 'hello' } });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/\[redacted\]\.\.\.$/);
    expectNone(r.text);
  });

  it('is logged without the key when the upstream fails (503)', async () => {
    answer = (req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: dumped(req, (b) => xxd(b)) } }));
    };
    const before = logLines.length;
    const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
    expect(r.status).toBeGreaterThanOrEqual(500);
    const lines = logLines.slice(before);
    const failed = lines.filter((l) => l.includes('upstream raw failed'));
    expect(failed.join('\n')).toContain('00000010: ');
    for (const l of lines) expectNone(l);
  });
});
