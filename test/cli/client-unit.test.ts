import { createServer } from 'node:http';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/cli/client/api.js';
import { byteProgress, jobProgress } from '../../src/cli/client/progress.js';
import { applyParam } from '../../src/cli/client/params.js';
import type { ClientTiming } from '../../src/cli/client/timing.js';
import { EXIT } from '../../src/cli/exit.js';
import { CONTROL } from './harness.js';

const fast: ClientTiming = { pollMs: 10, backoffMs: 10, headersTimeoutMs: 5_000, bodyTimeoutMs: 5_000, downloadRetries: 2 };
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** A loopback server answering from a script of (status, headers, body), recording when each request came. */
async function scripted(answers: [number, Record<string, string>, string][]): Promise<{ url: string; times: number[] }> {
  const times: number[] = [];
  const server = createServer((req, res) => {
    times.push(Date.now());
    const [status, headers, body] = answers[Math.min(times.length - 1, answers.length - 1)]!;
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  close = () => new Promise<void>((r) => server.close(() => r()));
  const a = server.address();
  return { url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`, times };
}

const limited = (after: string): [number, Record<string, string>, string] => [429, { 'retry-after': after }, JSON.stringify({ error: { type: 'rate_limit_error', message: 'slow down' } })];

describe('API client retries (spec 7.4)', () => {
  it('waits out 429 with Retry-After (scaled) and then succeeds', async () => {
    const s = await scripted([limited('3'), limited('3'), [200, {}, '{"ok":true}']]);
    const r = await new ApiClient(s.url, 'k', fast).json('GET', '/v1/models');
    expect(r).toEqual({ ok: true });
    expect(s.times).toHaveLength(3);
    // Retry-After: 3 is three backoff units (10 ms each here).
    expect(s.times[1]! - s.times[0]!).toBeGreaterThanOrEqual(28);
  });

  it('backs off 1, 2, 4, 8 units on 503 without Retry-After, then reports the error with exit 1', async () => {
    const s = await scripted([[503, {}, JSON.stringify({ error: { type: 'server_error', message: 'no upstream' } })]]);
    const err = await new ApiClient(s.url, 'k', fast).json('POST', '/v1/videos/generations', {}).catch((e) => e);
    expect(s.times).toHaveLength(5);
    const gaps = s.times.slice(1).map((t, i) => t - s.times[i]!);
    expect(gaps.map((g, i) => g >= 10 * 2 ** i - 2)).toEqual([true, true, true, true]);
    expect(err.exitCode).toBe(EXIT.failure);
    expect(err.message).toBe('503 server_error: no upstream');
  });

  it('does not retry a refused request, and maps 402 and a persistent 429 to exit 6', async () => {
    const s = await scripted([[402, {}, JSON.stringify({ error: { type: 'insufficient_quota', message: 'balance too low' } })]]);
    const err = await new ApiClient(s.url, 'k', fast).json('POST', '/v1/videos/generations', {}).catch((e) => e);
    expect(s.times).toHaveLength(1);
    expect(err.exitCode).toBe(EXIT.quota);
  });

  it('reports a non-JSON error body by its status, without the body', async () => {
    const s = await scripted([[400, { 'content-type': 'text/html' }, '<html>\u001b[31mproxy</html>']]);
    const err = await new ApiClient(s.url, 'k', fast).json('GET', '/v1/models').catch((e) => e);
    expect(err.message).toBe('GET /v1/models answered HTTP 400');
    expect(err.exitCode).toBe(EXIT.usage);
  });
});

describe('progress output', () => {
  const capture = (tty: boolean) => {
    const s = new PassThrough() as PassThrough & { isTTY?: boolean; columns?: number };
    s.isTTY = tty;
    s.columns = 80;
    let text = '';
    s.on('data', (c) => (text += String(c)));
    return { stream: s, text: () => text };
  };

  it('draws a bar on a terminal', () => {
    const c = capture(true);
    const p = jobProgress(c.stream as never);
    p.update('processing', 40);
    p.stop();
    expect(c.text()).toMatch(/processing/);
    expect(c.text()).toMatch(/40%/);
    expect(c.text()).toMatch(CONTROL);
  });

  it('prints plain lines only when something changed, without control characters, when not a terminal', () => {
    const c = capture(false);
    const p = jobProgress(c.stream as never);
    p.update('processing', undefined);
    p.update('processing', undefined);
    p.update('processing', 50);
    p.update('completed\u001b[2J', 100);
    p.stop();
    const b = byteProgress('download', c.stream as never);
    b.start(1000, 400);
    b.advance(600);
    b.stop();
    const lines = c.text().trim().split('\n');
    expect(lines.map((l) => l.replace(/ elapsed \d+s$/, '').replace(/ after \d+s$/, ''))).toEqual([
      'status processing',
      'status processing progress 50%',
      'status completed progress 100%',
      'download: resuming at 400 of 1000 bytes',
      'download: 1000 of 1000 bytes',
    ]);
    expect(c.text()).not.toMatch(CONTROL);
  });
});

describe('--param', () => {
  it('parses JSON values, nests dotted keys, and refuses prototype keys and key-less pairs', () => {
    const body: Record<string, unknown> = {};
    applyParam(body, 'seed=42');
    applyParam(body, 'watermark=false');
    applyParam(body, 'parameters.sampleCount=2');
    applyParam(body, 'parameters.personGeneration=allow_adult');
    applyParam(body, 'negative_prompt=blurry, dark');
    expect(body).toEqual({ seed: 42, watermark: false, parameters: { sampleCount: 2, personGeneration: 'allow_adult' }, negative_prompt: 'blurry, dark' });
    expect(() => applyParam({}, '__proto__.polluted=1')).toThrow(/unusable key/);
    expect(() => applyParam({}, '=1')).toThrow(/not key=value/);
    expect(() => applyParam({ seed: 1 }, 'seed.x=1')).toThrow(/already a value/);
  });
});
