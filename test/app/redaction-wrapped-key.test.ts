import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModules } from '../../src/embeddings/vendors/registry.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createVideo } from '../helpers/video.js';

/**
 * A vendor (or a proxy in front of it) quoting the Authorization header it received in an error
 * message folded at 76 columns, as mail-style and some logging libraries wrap long lines. The key is
 * a long project key, so the fold cuts it into pieces, the first of which also looks like a key.
 * Nothing of the key may reach the client, the job's stored error or the log.
 */
const VENDORS = ['sora', 'azure-sora', 'wan', 'seedance', 'fal', 'veo'];
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
/** Shorter runs than this may occur in any text by chance; a longer one is a piece of the key. */
const RUN = 12;

/** A project key as OpenAI issues them: "sk-proj-" and 153 more characters. */
function projectKey(): string {
  const bytes = randomBytes(153);
  return `sk-proj-${[...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

/** `text` cut into lines of `width` characters, joined with `eol`. */
function fold(text: string, width: number, eol: string): string {
  const lines: string[] = [];
  for (let i = 0; i < text.length; i += width) lines.push(text.slice(i, i + width));
  return lines.join(eol);
}

const keys = new Map<string, string>();
const sims = new Map<string, SimServer>();
const logLines: string[] = [];
let gw: TestGateway;
let key: string;

function quote(vendor: string, eol: string): string {
  return fold(`Invalid request headers: Authorization: Bearer ${keys.get(vendor)!} was refused.`, 76, eol);
}

/** An error body every vendor's classifier reads its message from. */
function errorBody(message: string): unknown {
  return { error: { message, code: 'InvalidParameter', type: 'invalid_request_error' }, message, code: 'InvalidParameter', detail: message };
}

/** The pieces of `secret` long enough to say something about it that stand in `text`. */
function leakedRuns(text: string, secret: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + RUN <= secret.length; i++) if (text.includes(secret.slice(i, i + RUN))) out.push(secret.slice(i, i + RUN));
  return out;
}

function expectNoKey(text: string, vendor: string): void {
  const runs = leakedRuns(text, keys.get(vendor)!);
  expect(runs.length, `${runs.length} runs of the key, first "${runs[0]}" in: ${text.slice(0, 600)}`).toBe(0);
}

const modelOf = (vendor: string) => {
  const m = videoModules.find((x) => x.vendor.id === vendor)!;
  return m.simulator.demo(sims.get(vendor)!).models[0]!.name;
};

beforeAll(async () => {
  const upstreams: Record<string, unknown>[] = [];
  const models: Record<string, unknown> = {};
  for (const vendor of VENDORS) {
    const m = videoModules.find((x) => x.vendor.id === vendor)!;
    keys.set(vendor, projectKey());
    const sim = await m.simulator.start({ taskMs: 60_000, apiKey: keys.get(vendor)! });
    sims.set(vendor, sim);
    const d = m.simulator.demo(sim);
    for (const model of d.models) models[model.name] = { capabilities: ['video'], price: { per_second: 0.1 } };
    // Veo's demo signs in with a service account: here its static token is the long key instead.
    const { service_account: _sa, ...options } = d.options as Record<string, unknown>;
    const credential = d.apiKey !== undefined ? { api_key: d.apiKey } : { access_token: keys.get(vendor)! };
    upstreams.push({ ...options, ...credential, name: `${vendor}-up`, vendor, base_url: sim.url, models: d.models.map((x) => x.name), timeout_ms: 5_000 });
  }
  // OpenAI's embeddings and chat completions, whose errors are read as the Sora adapter reads them.
  const openai = embeddingModules.find((m) => m.id === 'openai')!;
  keys.set('openai', projectKey());
  const sim = await openai.simulator.start({ apiKey: keys.get('openai')! });
  sims.set('openai', sim);
  const d = openai.simulator.demo(sim);
  for (const model of d.models)
    models[model.name] = { capabilities: model.capabilities, price: { per_million_input_tokens: 1, per_million_output_tokens: 1 } };
  upstreams.push({ ...d.options, name: 'openai-up', vendor: 'openai', base_url: sim.url, api_key: d.apiKey, models: d.models.map((x) => x.name), timeout_ms: 5_000 });
  gw = await startTestGateway({ upstreams, models, log_level: 'debug' }, { logSink: { write: (line: string) => void logLines.push(line) } });
  ({ key } = await gw.newKey(1_000_000));
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([...sims.values()].map((s) => s.close()));
});

describe.each(VENDORS.flatMap((v) => [[v, 'LF', '\n'] as const, [v, 'CRLF', '\r\n'] as const]))('%s quoting its key folded at 76 columns (%s)', (vendor, _name, eol) => {
  it('create: the 400 reaches the client without any of the key', async () => {
    sims.get(vendor)!.inject({ kind: 'status', status: 400, json: errorBody(quote(vendor, eol)) }, 1, /^(?!\/token)/);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendor), prompt: 'a red fox in the snow' } });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.json.error.message).toContain('Bearer [redacted]');
    expectNoKey(r.text, vendor);
  });

  it('create: a failing upstream is logged without any of the key', async () => {
    const before = logLines.length;
    sims.get(vendor)!.inject({ kind: 'status', status: 503, json: errorBody(quote(vendor, eol)) }, 1, /^(?!\/token)/);
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(vendor), prompt: 'a red fox in the snow' } });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expectNoKey(r.text, vendor);
    const lines = logLines.slice(before);
    expect(lines.some((l) => l.includes('Bearer [redacted]'))).toBe(true);
    for (const l of lines) expectNoKey(l, vendor);
  });

  it("poll: the job's error is stored and shown without any of the key", async () => {
    const { created, jobId } = await createVideo(gw, key, { model: modelOf(vendor), prompt: 'a red fox in the snow' });
    sims.get(vendor)!.inject({ kind: 'status', status: 400, json: errorBody(quote(vendor, eol)) }, 1, /^(?!\/token)/);
    const r = await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
    expect(r.json.status).toBe('failed');
    expect(r.json.error.message).toContain('Bearer [redacted]');
    expectNoKey(r.text, vendor);
    const job = await gw.services.video.deps.store.getJob(jobId);
    expectNoKey(JSON.stringify(job), vendor);
  });
});

/** A 2xx poll answer saying the task failed, with `message` as its reason, in each vendor's words. */
const FAILED_TASK: Record<string, (message: string) => unknown> = {
  wan: (message) => ({ request_id: 'r1', output: { task_id: 't1', task_status: 'FAILED', code: 'InternalError', message } }),
  seedance: (message) => ({ id: 't1', status: 'failed', error: { code: 'InternalServiceError', message } }),
  veo: (message) => ({ name: 'op', done: true, error: { code: 13, message } }),
  fal: (message) => ({ status: 'COMPLETED', error: message, error_type: 'runner_disconnected' }),
};

describe.each(Object.keys(FAILED_TASK).flatMap((v) => [[v, 'LF', '\n'] as const, [v, 'CRLF', '\r\n'] as const]))(
  '%s reporting a failed task that quotes its key folded at 76 columns (%s)',
  (vendor, _name, eol) => {
    it("the job's error is stored and shown without any of the key", async () => {
      const { created, jobId } = await createVideo(gw, key, { model: modelOf(vendor), prompt: 'a red fox in the snow' });
      sims.get(vendor)!.inject({ kind: 'status', status: 200, json: FAILED_TASK[vendor]!(quote(vendor, eol)) }, 1, /^(?!\/token)/);
      const r = await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
      expect(r.json.status).toBe('failed');
      expect(r.json.error.message).toContain('Bearer [redacted]');
      expectNoKey(r.text, vendor);
      expectNoKey(JSON.stringify(await gw.services.video.deps.store.getJob(jobId)), vendor);
    });
  },
);

describe.each([['LF', '\n'], ['CRLF', '\r\n']])('OpenAI embeddings and chat quoting the key folded at 76 columns (%s)', (_name, eol) => {
  const calls = [
    ['/v1/embeddings', { model: 'text-embedding-3-small', input: 'hello' }],
    ['/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }],
  ] as const;

  it.each(calls)('%s: the 400 reaches the client without any of the key', async (path, body) => {
    sims.get('openai')!.inject({ kind: 'status', status: 400, json: errorBody(quote('openai', eol)) });
    const r = await call(gw, 'POST', path, { key, body });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toContain('Bearer [redacted]');
    expectNoKey(r.text, 'openai');
  });

  it('chat: a failing upstream is logged without any of the key', async () => {
    const before = logLines.length;
    sims.get('openai')!.inject({ kind: 'status', status: 503, json: errorBody(quote('openai', eol)) });
    const [path, body] = calls[1];
    const r = await call(gw, 'POST', path, { key, body });
    expect(r.status).toBeGreaterThanOrEqual(500);
    const lines = logLines.slice(before);
    expect(lines.some((l) => l.includes('Bearer [redacted]'))).toBe(true);
    for (const l of lines) expectNoKey(l, 'openai');
  });
});

describe('the log', () => {
  it('holds none of any key', () => {
    expect(logLines.length).toBeGreaterThan(0);
    for (const l of logLines) for (const vendor of keys.keys()) expectNoKey(l, vendor);
  });
});
