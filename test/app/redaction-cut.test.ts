import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * An upstream (a raw HTTP server on loopback) whose long error message quotes its key where the
 * gateway cuts the message to a bounded length: the cut goes through the key, and what it keeps of
 * it (the key's first characters, in clear, in hex or in base64) must reach neither the client nor
 * the log. The key has no credential shape, so only the configured value can tell it.
 */
const KEY = 'Zq8Wm3RtPv7Lx2Nc9Hb4Kd6Jf0Gy5Ts';
const HEX = Buffer.from(KEY).toString('hex');
const B64 = Buffer.from(`user:${KEY}`).toString('base64');
/** Where the gateway cuts an upstream message (src/embeddings/verdicts.ts), and a body that is not JSON from Wan's API. */
const CUT = 500;
const WAN_CUT = 300;

let upstream: Server;
let gw: TestGateway;
let key: string;
const logLines: string[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();

/** A message of words whose `form` starts `kept` characters before the cut at `cut`. */
function straddling(form: string, kept: number, cut = CUT): string {
  const head = 'The upstream could not serve this request because ';
  let filler = head;
  while (filler.length < cut - kept - 10) filler += 'words ';
  filler = filler.slice(0, cut - kept - 5);
  return `${filler}key ${form} and then a lot more text after it that the cut drops.`;
}

/** No run of six characters of the key (any case), of its hex, or of its base64 text. */
function expectNoPart(text: string): void {
  const lower = text.toLowerCase();
  for (const form of [KEY, HEX])
    for (let i = 0; i + 6 <= form.length; i++) expect(lower, form.slice(i, i + 6)).not.toContain(form.slice(i, i + 6).toLowerCase());
  for (let i = 0; i + 8 <= B64.length; i++) expect(text, B64.slice(i, i + 8)).not.toContain(B64.slice(i, i + 8));
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
      upstreams: [
        { name: 'raw', vendor: 'openai', base_url: `http://127.0.0.1:${port}`, api_key: KEY, models: ['emb'], timeout_ms: 2_000 },
        { name: 'raw-wan', vendor: 'wan', base_url: `http://127.0.0.1:${port}`, api_key: KEY, models: ['wan2.6-t2v'], timeout_ms: 2_000 },
      ],
      models: {
        emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } },
        'wan2.6-t2v': { capabilities: ['video'], price: { per_second: 0.1 } },
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

const embed = () => call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'emb', input: 'hello' } });

describe('an upstream message cut through the key it quotes', () => {
  it.each([
    ['the key', KEY, 10],
    ['the key upper-cased', KEY.toUpperCase(), 7],
    ['its hex', HEX, 20],
    ['a Basic header of it', B64, 14],
  ])('keeps no part of %s at the cut', async (_what, form, kept) => {
    const message = straddling(form, kept);
    answer = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
    };
    const r = await embed();
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('upstream_rejected');
    // The message still reads up to the cut.
    expect(r.json.error.message).toMatch(/^The upstream could not serve this request because words .* key \[redacted\]\.\.\.$/);
    expectNoPart(r.text);
  });

  it('keeps no part of it from a body that is not JSON', async () => {
    const message = straddling(KEY, 9);
    answer = (_req, res) => {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(message);
    };
    const r = await embed();
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/ key \[redacted\]\.\.\.$/);
    expectNoPart(r.text);
  });

  it('keeps no part of it in the log line of a failed video create', async () => {
    answer = (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end(straddling(KEY, 8, WAN_CUT));
    };
    const before = logLines.length;
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'wan2.6-t2v', prompt: 'a red fox in the snow' } });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expectNoPart(r.text);
    gw.services.logger.flush();
    const lines = logLines.slice(before);
    expect(lines.filter((l) => l.includes('video create attempt failed')).join('\n')).toContain(' key [redacted]...');
    for (const l of lines) expectNoPart(l);
  });
});
