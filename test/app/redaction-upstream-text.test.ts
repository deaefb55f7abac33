import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * An upstream (a raw HTTP server on loopback) whose error messages quote its key hex-encoded (also
 * with colons between bytes) and percent-encoded, an internal URL it failed to reach, an internal
 * proxy host, its own address and the operator's organization, as a misconfigured proxy in front of
 * a vendor does. None of it may reach the client or the log.
 */
const KEY = 'sk-upstream-secret-0123456789';
const HEX = Buffer.from(KEY).toString('hex');
/** As a certificate fingerprint or a hex dump writes it, and as a URL carries it. */
const HEX_COLONS = HEX.replace(/(..)(?!$)/g, '$1:').toUpperCase();
const PERCENT = HEX.replace(/(..)/g, '%$1');
/** The operator's OpenAI organization, configured for the upstream. */
const ORG = 'org-operator0123456789';

let upstream: Server;
let port = 0;
let gw: TestGateway;
let key: string;
const logLines: string[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();

/** What the upstream says: every kind of thing that must not leave, in one message. */
const leaky = () =>
  `Invalid key ${HEX} (x-api-key: ${HEX.toUpperCase()}, dump ${HEX_COLONS}, GET /auth?k=${PERCENT}); connect ECONNREFUSED http://10.0.3.4:8080/internal/v1/embeddings ` +
  `via proxy sora-gw.corp:3128, answered by 127.0.0.1:${port} for organization ${ORG}`;

/** Everything of `leaky` that must be gone. */
const secrets = () => [HEX, HEX.toUpperCase(), HEX_COLONS.slice(0, 30), PERCENT.slice(0, 30), '10.0.3.4', '/internal/', 'sora-gw.corp', `127.0.0.1:${port}`, ORG];

function expectClean(text: string): void {
  for (const s of secrets()) expect(text, s).not.toContain(s);
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  port = (upstream.address() as { port: number }).port;
  gw = await startTestGateway(
    {
      upstreams: [{ name: 'raw', vendor: 'openai', base_url: `http://127.0.0.1:${port}`, api_key: KEY, organization: ORG, models: ['emb', 'gpt-4o'], timeout_ms: 2_000 }],
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

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

describe('an upstream error quoting its key in hex and internal addresses', () => {
  it('reaches the client as a readable message without any of them', async () => {
    answer = (_req, res) => json(res, 400, { error: { message: leaky(), type: 'invalid_request_error', code: 'bad_input' } });
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: 'hello' } });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('upstream_rejected');
    expectClean(r.text);
    expect(r.json.error.message).toBe(
      'Invalid key [redacted] (x-api-key: [redacted], dump [redacted], GET /auth?k=[redacted]); connect ECONNREFUSED [internal-url] via proxy [internal-host], answered by [upstream] for organization [upstream]',
    );
  });

  it('is logged without any of them when the upstream fails (503)', async () => {
    answer = (_req, res) => json(res, 503, { error: { message: leaky() } });
    const before = logLines.length;
    const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expectClean(r.text);
    const lines = logLines.slice(before);
    const failed = lines.filter((l) => l.includes('upstream raw failed'));
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.join('\n')).toContain('[internal-url]');
    for (const l of lines) expectClean(l);
  });

  it('is removed from an error event of a stream', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'a' } }] };
      res.end(`data: ${JSON.stringify(chunk)}\n\ndata: ${JSON.stringify({ error: { message: leaky() } })}\n\n`);
    };
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(text).toContain('[internal-url]');
    expectClean(text);
    // The event is still JSON the client can read.
    const event = text.split('\n\n').find((e) => e.includes('[internal-url]'))!;
    expect(JSON.parse(event.replace(/^data: /, '')).error.message).toContain('[upstream]');
  });

  it('leaves no trace in any log line', () => {
    expect(logLines.length).toBeGreaterThan(0);
    for (const l of logLines) expectClean(l);
  });
});
