import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { ensureDemoKey, startDemo, type Demo } from '../../src/demo.js';
import { buildServices, type Services } from '../../src/services.js';
import { createLogger } from '../../src/ops/logger.js';
import { closeListener } from '../../src/http/close-listener.js';

/**
 * Findings of long fuzzing runs, replayed byte for byte over a raw socket so that nothing a client
 * library does (merging, refusing, tolerating) hides what the gateway actually wrote.
 */
let demo: Demo;
let services: Services;
let app: FastifyInstance;
let dataDir: string;
let port: number;
let key: string;
let admin: string;

/** Sends `text` as is and returns everything the server wrote until it closed the connection. */
function exchange(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (out += c));
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no close; got: ${out}`)));
    socket.write(text);
  });
}

function parse(raw: string): { status: number; headers: string; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  expect(end, raw).toBeGreaterThan(0);
  return { status: Number(raw.slice(9, 12)), headers: raw.slice(0, end), body: raw.slice(end + 4) };
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'gw-fuzz-regr-'));
  demo = await startDemo({ host: '127.0.0.1', port: 0, dataDir, taskMs: 200 });
  services = await buildServices(demo.config, { logger: createLogger('silent') });
  app = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  port = typeof addr === 'object' && addr ? addr.port : 0;
  key = await ensureDemoKey(services.admin, dataDir);
  admin = services.config.admin_token!;
}, 60_000);

afterAll(async () => {
  if (app) await closeListener(app);
  await services?.close();
  await Promise.all((demo?.sims ?? []).map((s) => s.close()));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('repeated query parameters', () => {
  const cases: [string, string][] = [
    ['/admin/keys?account=&account=3', 'admin'],
    ['/admin/accounts/demo/ledger?limit=1&limit=2', 'admin'],
    ['/admin/usage?from=2026-01-01&from=2026-02-01', 'admin'],
    ['/v1/usage?from=2026-01-01&from=2026-02-01', 'user'],
    ['/v1/videos/video_x/content?index=0&index=1', 'user'],
    ['/v1/videos/video_x/content?signature=a&signature=b&expires=1', 'none'],
    ['/v1/models?x=1&x=2', 'user'],
    ['/health?a=1&a=2', 'none'],
  ];
  it.each(cases)('GET %s is a 400 in the spec shape naming the parameter', async (path, who) => {
    const auth = who === 'admin' ? `Authorization: Bearer ${admin}\r\n` : who === 'user' ? `Authorization: Bearer ${key}\r\n` : '';
    const r = parse(await exchange(`GET ${path} HTTP/1.1\r\nHost: gw\r\n${auth}Connection: close\r\n\r\n`));
    expect(r.status, r.body).toBe(400);
    const name = /[?&]([^=]+)=[^&]*&\1=/.exec(path)![1];
    expect(JSON.parse(r.body)).toEqual({ error: { type: 'invalid_request_error', code: 'repeated_parameter', param: name, message: `Query parameter '${name}' is repeated; send it once.` } });
  });

  it('a parameter given once still works', async () => {
    const r = parse(await exchange(`GET /admin/keys?account=demo HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${admin}\r\nConnection: close\r\n\r\n`));
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body).data.length).toBeGreaterThan(0);
  });
});

describe('HEAD answers carry no body', () => {
  // Each: a HEAD the gateway refuses, from a different place that writes the answer.
  const cases: [string, string][] = [
    ['the HTTP parser (malformed header)', 'HEAD /admin/keys HTTP/1.1\r\nHost: gw\r\nBad Header: 1\r\n\r\n'],
    ['the HTTP parser (conflicting Content-Length)', 'HEAD /admin/accounts HTTP/1.1\r\nHost: gw\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n'],
    ['the admin token guard', 'HEAD /admin/keys HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n'],
    ['the not-found handler', 'HEAD /admin/nope HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n'],
    ['the query check', 'HEAD /admin/keys?account=a&account=b HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ADMIN\r\nConnection: close\r\n\r\n'],
    ['a framework error (bad %-escape)', 'HEAD /admin/accounts/%zz HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ADMIN\r\nConnection: close\r\n\r\n'],
    ['an admin route answering 200', 'HEAD /admin/accounts HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ADMIN\r\nConnection: close\r\n\r\n'],
  ];
  it.each(cases)('from %s', async (_from, text) => {
    const raw = await exchange(text.replace('ADMIN', admin));
    const r = parse(raw);
    expect(r.status).toBeGreaterThanOrEqual(200);
    expect(r.body, 'bytes after the head of a HEAD answer').toBe('');
  });

  it('a GET refused by the HTTP parser still gets its error body', async () => {
    const r = parse(await exchange('GET /admin/keys HTTP/1.1\r\nHost: gw\r\nBad Header: 1\r\n\r\n'));
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error.code).toBe('malformed_request');
  });
});

describe('a multipart body that cannot be read', () => {
  // Found by the endpoint fuzzer: with no boundary in Content-Type, the form parser's own error
  // reached the error renderer as an internal error.
  const cases: [string, string, string][] = [
    ['/v1/videos', 'multipart/form-data', '[]'],
    ['/v1/videos', 'multipart/form-data', ''],
    ['/v1/files', 'multipart/form-data', '[]'],
    ['/v1/files', 'multipart/form-data; charset=utf-8', '--x\r\n'],
  ];
  it.each(cases)('POST %s with %s and body %j is a 400 invalid_body', async (path, type, body) => {
    const head = `POST ${path} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
    const r = parse(await exchange(head + body));
    expect(r.status, r.body).toBe(400);
    expect(JSON.parse(r.body).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_body' });
  });
});

describe('bytes after a complete request', () => {
  // Found by the endpoint fuzzer: a client sent a body on OPTIONS without framing it, and the
  // gateway's refusal of the byte after the request was written after (or instead of) the answer.
  const create = (prompt: string) => JSON.stringify({ model: 'sora-2', prompt, seconds: 4 });
  const post = (body: string, close: boolean) =>
    `POST /v1/videos/generations HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${close ? 'Connection: close\r\n' : ''}\r\n${body}`;
  const answers = (raw: string) => (raw.match(/HTTP\/1\.1 \d{3} /g) ?? []).map((a) => a.trim());
  const jobsWith = async (prompt: string) => (await services.store.listJobs(undefined, { limit: 50, order: 'desc' })).filter((j) => JSON.stringify(j.request).includes(prompt));

  it('after a request that said Connection: close, they are ignored: its answer is the only one', async () => {
    const raw = await exchange(`${post(create('close then a stray byte'), true)}x`);
    expect(answers(raw), raw).toEqual(['HTTP/1.1 200']);
    const job = JSON.parse(parse(raw).body);
    expect(job).toMatchObject({ object: 'video', status: 'processing' });
    expect(await jobsWith('close then a stray byte')).toHaveLength(1);
  });

  it('on a kept-alive connection, the refusal of the next request follows the answer in flight', async () => {
    const raw = await exchange(`${post(create('keep-alive then a stray byte'), false)}x`);
    expect(answers(raw), raw).toEqual(['HTTP/1.1 200', 'HTTP/1.1 400']);
    const second = raw.slice(raw.lastIndexOf('HTTP/1.1 400'));
    expect(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4)).error.code).toBe('malformed_request');
    expect(JSON.parse(parse(raw.slice(0, raw.lastIndexOf('HTTP/1.1 400'))).body)).toMatchObject({ object: 'video', status: 'processing' });
  });

  it('an answer written at once is not followed by a refusal (the fuzzer case)', async () => {
    const raw = await exchange('OPTIONS /console/session HTTP/1.1\r\nauthorization: Bearer \r\ncontent-type: application/vnd.api+json\r\nHost: gw\r\nConnection: close\r\n\r\n0');
    expect(answers(raw), raw).toEqual(['HTTP/1.1 404']);
    expect(JSON.parse(parse(raw).body).error).toMatchObject({ type: 'not_found', code: 'route_not_found' });
  });
});

describe('a body that breaks after its request was answered', () => {
  // A 401 goes out before the body is read; the rest of the body is read and discarded. A framing
  // error in that rest got a second answer (400) to the same request.
  it('gets no second answer', async () => {
    const raw = await exchange('POST /v1/embeddings HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\nZZZ\r\n');
    expect(raw.match(/HTTP\/1\.1 \d{3} /g), raw).toEqual(['HTTP/1.1 401 ']);
    expect(JSON.parse(parse(raw).body).error.type).toBe('authentication_error');
  });
});
