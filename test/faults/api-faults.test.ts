import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { httpCall } from './client.js';
import { expectClean, expectErrorShape, snapshot, startFaultEnv, type FaultEnv } from './env.js';
import type { Fault } from './fault-upstream.js';

/**
 * Faults between the gateway and an OpenAI-compatible upstream, for embeddings and chat (buffered
 * and streamed): the gateway in its own process, the simulator behind a fault upstream.
 */
let env: FaultEnv;
const EMBEDDINGS = /\/v1\/embeddings$/;
const CHAT = /\/v1\/chat\/completions$/;

beforeAll(async () => {
  env = await startFaultEnv();
  // Warm both paths so every case starts from a gateway that has served them.
  expect((await embed()).status).toBe(200);
  expect((await chat(true)).status).toBe(200);
}, 60_000);
afterAll(async () => env?.stop());
beforeEach(() => {
  env.api.clear();
  env.apiSim.settings.chatChunkDelayMs = 0;
});

const embed = (model = 'text-embedding-3-small') => httpCall(`${env.gw.url}/v1/embeddings`, { key: env.key, body: { model, input: 'hello world' } });
const chat = (stream: boolean) =>
  httpCall(`${env.gw.url}/v1/chat/completions`, { key: env.key, body: { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'tell me a story' }] } });

describe('embeddings: the upstream fails, the client gets a 5xx in the error shape and pays nothing', () => {
  it('refuses the connection: 503 upstream_unavailable', async () => {
    const before = await snapshot(env);
    const r = await embed('text-embedding-3-large');
    expect(r.status).toBe(503);
    expectErrorShape(r.json, 'server_error', 'upstream_unavailable');
    await expectClean(env, before);
  });

  const cases: [string, Fault, number, string][] = [
    ['resets before the headers', { kind: 'reset-before-headers' }, 502, 'upstream_error'],
    ['never sends the headers', { kind: 'stall-headers' }, 504, 'upstream_timeout'],
    ['resets mid-body', { kind: 'reset-mid-body', after: 100 }, 502, 'upstream_error'],
    ['sends fewer bytes than its Content-Length', { kind: 'short-body', send: 100 }, 502, 'upstream_error'],
    ['stalls mid-body', { kind: 'stall', after: 100 }, 504, 'upstream_timeout'],
    ['trickles its body a byte at a time', { kind: 'trickle', everyMs: 20 }, 504, 'upstream_timeout'],
    ['answers 200 with malformed JSON', { kind: 'answer', status: 200, body: '{"data": [1, 2' }, 502, 'upstream_error'],
    ['answers 500 with an HTML page', { kind: 'answer', status: 500, contentType: 'text/html', body: '<html>oops</html>' }, 502, 'upstream_error'],
  ];
  for (const [what, fault, status, code] of cases) {
    it(`${what}: ${status} ${code}`, async () => {
      const before = await snapshot(env);
      env.api.set(EMBEDDINGS, fault);
      const r = await embed();
      expect(r.status, r.body.toString()).toBe(status);
      expectErrorShape(r.json, 'server_error', code);
      env.api.clear();
      await expectClean(env, before);
    });
  }
});

describe('chat: the upstream fails', () => {
  it('answers 200 with malformed JSON (not streamed): 502, nothing charged', async () => {
    const before = await snapshot(env);
    env.api.set(CHAT, { kind: 'answer', status: 200, body: '{"choices": [' });
    const r = await chat(false);
    expect(r.status).toBe(502);
    expectErrorShape(r.json, 'server_error', 'upstream_error');
    await expectClean(env, before);
  });

  it('resets before the first event: 502 in the error shape, nothing charged', async () => {
    const before = await snapshot(env);
    env.api.set(CHAT, { kind: 'reset-before-headers' });
    const r = await chat(true);
    expect(r.status).toBe(502);
    expectErrorShape(r.json, 'server_error', 'upstream_error');
    await expectClean(env, before);
  });

  it('resets mid-stream: the events so far, then an error event and a clean end', async () => {
    const before = await snapshot(env);
    env.apiSim.settings.chatChunkDelayMs = 10;
    env.api.set(CHAT, { kind: 'reset-mid-body', after: 400 });
    const r = await chat(true);
    expect(r.status).toBe(200);
    expect(r.truncated).toBe(false);
    const text = r.body.toString();
    expect(text).toMatch(/^data: /);
    expect(text).toContain('"code":"upstream_error"');
    expect(text).not.toContain('[DONE]');
    // The tokens that reached the client are billed, no more: see the chat billing tests.
    await expectClean(env, before, { charged: true });
  });

  it('stalls mid-stream: the stall timeout ends the stream with an error event', async () => {
    const before = await snapshot(env);
    env.api.set(CHAT, { kind: 'stall', after: 300 });
    const started = Date.now();
    const r = await chat(true);
    expect(r.status).toBe(200);
    expect(r.body.toString()).toContain('"code":"upstream_error"');
    expect(Date.now() - started).toBeLessThan(10_000);
    env.api.clear();
    await expectClean(env, before, { charged: true });
  });

  it('sends malformed SSE (no data lines, broken JSON): relayed as it came, the stream ends cleanly', async () => {
    const before = await snapshot(env);
    const body = 'this is not an event\n\nevent: odd\ndata: {"choices": [\n\n: comment only\n\n';
    env.api.set(CHAT, { kind: 'answer', status: 200, contentType: 'text/event-stream', body });
    const r = await chat(true);
    expect(r.status).toBe(200);
    expect(r.truncated).toBe(false);
    expect(r.body.toString()).toBe(body);
    await expectClean(env, before, { charged: true });
  });

  it('sends an event that never ends: cut at 1 MiB with an error event, not buffered without bound', async () => {
    const before = await snapshot(env);
    const body = `data: ${'a'.repeat(3 * 1024 * 1024)}`;
    env.api.set(CHAT, { kind: 'answer', status: 200, contentType: 'text/event-stream', body });
    const r = await chat(true);
    expect(r.status).toBe(200);
    expect(r.body.length).toBeLessThan(4096);
    expect(r.body.toString()).toContain('"code":"upstream_error"');
    await expectClean(env, before, { charged: true });
  });
});
