import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Configured keys of odd shapes, each the key of its own upstream (a raw HTTP server on loopback that
 * echoes the key it received in every spelling below, in its error message): eight characters, full
 * of regular-expression metacharacters, one that starts with another's characters, and ordinary ones.
 * None of them may reach the client or the log in any spelling, nor any run of six of its characters.
 */
const KEYS = {
  short: 'Zq8Wm3Rt',
  meta: 'a.b*c+d?e(f)[g]{h}|i^$\\j',
  prefix: 'Zq8Wm3Rt-and-more-9f8e7d6c',
  slashed: 'AbC/dEf+GhI/jKl=mNo/pQr',
  plain: 'Pv7Lx2Nc9Hb4Kd6Jf0Gy5TsQm1',
};
type Name = keyof typeof KEYS;
const names = Object.keys(KEYS) as Name[];

/** The spellings the upstream echoes a key in, each in a sentence of its own. */
function spellings(k: string): string[] {
  const basic = Buffer.from(`user:${k}`).toString('base64');
  const half = Math.floor(k.length / 2);
  return [
    `key ${k} rejected`,
    `KEY ${k.toUpperCase()} REJECTED`,
    `basic ${basic} rejected`,
    `basic without padding ${basic.replace(/=+$/, '')} rejected`,
    `basic url-safe ${Buffer.from(`user:${k}`).toString('base64url')} rejected`,
    `wrapped ${k.slice(0, half)}\n${k.slice(half)} rejected`,
    `wrapped CRLF ${k.slice(0, half)}\r\n${k.slice(half)} rejected`,
    `form k=${encodeURIComponent(k)}&next=1 rejected`,
  ];
}

/** Runs of six characters (of the key, in any case) and of eight of its base64 text that must not be left. */
function leftovers(k: string): string[] {
  const out: string[] = [];
  const n = Math.min(6, k.length);
  for (let i = 0; i + n <= k.length; i++) out.push(k.slice(i, i + n).toLowerCase());
  return out;
}
const base64Runs = (k: string): string[] => {
  const b = Buffer.from(`user:${k}`).toString('base64').replace(/=+$/, '');
  // Past "user:" (the first eight characters encode it and the key's first bytes).
  return [b.slice(8, 16), Buffer.from(`user:${k}`).toString('base64url').slice(8, 16)];
};

function expectClean(where: string, text: string): void {
  // In a response or log line the text is JSON: its escapes are read back first, line breaks taken
  // out (a key wrapped into lines is still a leak) and percent-encoded bytes decoded.
  const read = text
    .toLowerCase()
    .replace(/\\[nr]|[\r\n]/g, '')
    .replace(/\\\\/g, '\\')
    .replace(/%([0-9a-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  for (const name of names) {
    for (const run of leftovers(KEYS[name])) expect(read, `${where}: ${name} ${run}`).not.toContain(run);
    for (const run of base64Runs(KEYS[name])) expect(text, `${where}: ${name} ${run}`).not.toContain(run);
  }
}

let upstream: Server;
let gw: TestGateway;
let key: string;
const logLines: string[] = [];
let status = 400;

beforeAll(async () => {
  upstream = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const sent = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: spellings(sent).join('; '), type: 'invalid_request_error' } }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as { port: number }).port;
  const models: Record<string, unknown> = {};
  for (const name of names) {
    models[`emb-${name}`] = { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } };
    models[`chat-${name}`] = { capabilities: ['chat'], price: { per_million_input_tokens: 1, per_million_output_tokens: 4 } };
  }
  gw = await startTestGateway(
    {
      upstreams: names.map((name) => ({
        name: `raw-${name}`,
        vendor: 'openai',
        base_url: `http://127.0.0.1:${port}`,
        api_key: KEYS[name],
        models: [`emb-${name}`, `chat-${name}`],
        timeout_ms: 2_000,
      })),
      models,
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

describe('keys of odd shapes echoed in every spelling', () => {
  it.each(names)('reach the client as a message without any part of them (%s)', async (name) => {
    status = 400;
    const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: `emb-${name}`, input: 'hello' } });
    expect(r.status).toBe(400);
    // The message is passed on (up to its cut), the keys in it redacted.
    expect(r.json.error.message).toMatch(/^key \[redacted\] rejected; KEY \[redacted\] REJECTED; basic \[redacted\] rejected/);
    expectClean(`response ${name}`, r.text);
  });

  it.each(names)('are logged without any part of them when the upstream fails (%s)', async (name) => {
    status = 503;
    const before = logLines.length;
    const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: { model: `chat-${name}`, messages: [{ role: 'user', content: 'hi' }] } });
    expect(r.status).toBeGreaterThanOrEqual(500);
    const lines = logLines.slice(before);
    expect(lines.filter((l) => l.includes(`upstream raw-${name} failed`)).join('\n')).toContain('wrapped [redacted] rejected');
    for (const l of lines) expectClean(`log ${name}`, l);
  });
});
