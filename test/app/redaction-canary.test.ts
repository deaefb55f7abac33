import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModules } from '../../src/embeddings/vendors/registry.js';
import { hexWithColons, type EchoFault, type SimServer } from '../../src/sim/framework.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * Reproduction 4 of issue 9, as a canary: every upstream echoes the credentials it received (and the
 * ones configured for it that never travel, such as an AWS secret or a private key), as they are, as
 * hex with colons and percent-encoded, in every field of its error envelope, on every path (video
 * create, poll, content; embeddings; chat streamed and not, and chat answered 200 with an error or with
 * the quote as its generated text) and every status. Every response body and
 * every log line is then searched for any credential in any of these spellings.
 */
const STATUSES = [400, 401, 403, 404, 409, 413, 422, 429, 500, 503];
/** Codes that make the vendors' classifiers answer with a moderation verdict (or a quota one). */
const CODES = ['content_policy_violation', 'DataInspectionFailed', 'InputTextSensitiveContentDetected', 'insufficient_quota'];
const CONTENT_STATUSES = [401, 403, 404, 410, 416, 500];
/** Veo's simulator is also its token endpoint: faults meant for Vertex must not hit it. */
const NOT_TOKEN = /^(?!\/token)/;

const canary = (name: string) => `CANARY${name.replace(/[^a-z]/gi, '')}${randomBytes(12).toString('hex')}`;

const sims = new Map<string, SimServer>();
/** Configured credentials per upstream name (what the echo quotes beyond the request's own). */
const configured = new Map<string, string[]>();
const bodies: string[] = [];
const logLines: string[] = [];
let gw: TestGateway;
let key: string;

function record(r: { text: string }): void {
  bodies.push(r.text);
}

function echo(upstream: string, status: number, more: Partial<EchoFault> = {}): EchoFault {
  return { kind: 'echo', status, extra: configured.get(upstream) ?? [], ...more };
}

/** Every credential: the configured ones and every credential header a simulator received. */
function allCredentials(): string[] {
  const out = new Set<string>();
  for (const list of configured.values()) for (const s of list) out.add(s);
  for (const sim of sims.values())
    for (const r of sim.requests)
      for (const h of ['authorization', 'api-key', 'x-api-key', 'x-goog-api-key']) {
        const v = r.headers[h];
        if (v) out.add(v.replace(/^\S+\s+/, ''));
      }
  // A multi-line secret (a PEM key) is searched line by line: quoting a part of it is a leak too.
  return [...out].flatMap((s) => (s.includes('\n') ? s.split('\n').filter((l) => l.length >= 24) : [s]));
}

beforeAll(async () => {
  const video: Parameters<typeof upstreamsFor>[0] = [];
  for (const m of videoModules) {
    const sim = await m.simulator.start({ taskMs: 60_000, apiKey: canary(m.vendor.id) });
    sims.set(m.vendor.id, sim);
    video.push({ module: m, sim });
  }
  const { upstreams, models } = upstreamsFor(video);
  for (const m of embeddingModules) {
    const sim = await m.simulator.start({ apiKey: canary(m.id) });
    sims.set(`emb-${m.id}`, sim);
    const d = m.simulator.demo(sim);
    for (const model of d.models)
      models[model.name] = {
        capabilities: model.capabilities,
        price: { per_million_input_tokens: model.pricePerMillionInput, per_million_output_tokens: model.pricePerMillionOutput ?? 0 },
      };
    upstreams.push({ ...d.options, name: `emb-${m.id}`, vendor: m.id, base_url: sim.url, api_key: d.apiKey, models: d.models.map((x) => x.name), timeout_ms: 5_000 });
  }
  for (const u of upstreams) {
    const { name, vendor: _v, base_url: _b, models: _m, priority: _p, timeout_ms: _t, ...secrets } = u as Record<string, unknown>;
    const values: string[] = [];
    const walk = (v: unknown) => {
      if (typeof v === 'string') values.push(v);
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    // Everything but the routing settings: keys, tokens, service-account fields, AWS ids and secrets.
    walk({ api_key: secrets['api_key'], access_token: secrets['access_token'], secret_access_key: secrets['secret_access_key'], access_key_id: secrets['access_key_id'] });
    const sa = secrets['service_account'] as Record<string, string> | undefined;
    if (sa) values.push(sa['private_key']!, sa['private_key_id']!);
    configured.set(String(name), values.filter((v) => typeof v === 'string' && v.length >= 8));
  }
  const many = { rpm: 1_000_000, tpm: 100_000_000 };
  const limits = { defaults: { video: { rpm: 1_000_000 }, embeddings: many, chat: many } };
  gw = await startTestGateway({ upstreams, models, limits, log_level: 'debug' }, { logSink: { write: (line: string) => void logLines.push(line) } });
  ({ key } = await gw.newKey(1_000_000));
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([...sims.values()].map((s) => s.close()));
});

const videoModel = (id: string) => videoModules.find((m) => m.vendor.id === id)!.simulator.demo(sims.get(id)!).models[0]!.name;
const create = (id: string) => call(gw, 'POST', '/v1/videos/generations', { key, body: { model: videoModel(id), prompt: 'a red fox in the snow' } });

describe.each(videoModules.map((m) => [m.vendor.id]))('canary through video vendor %s', (id) => {
  const up = `${id}-up`;

  it('create: every status and error code', async () => {
    const sim = sims.get(id)!;
    for (const status of STATUSES) {
      sim.inject(echo(up, status), 1, NOT_TOKEN);
      const r = await create(id);
      record(r);
      expect(r.status).toBeGreaterThanOrEqual(400);
    }
    for (const code of CODES) {
      sim.inject(echo(up, 400, { code }), 1, NOT_TOKEN);
      record(await create(id));
    }
  });

  it('poll: every status, error code and a 2xx body that quotes the key', async () => {
    const sim = sims.get(id)!;
    for (const fault of [...STATUSES.map((s) => echo(up, s)), ...CODES.map((code) => echo(up, 400, { code })), echo(up, 200)]) {
      const made = await create(id);
      expect(made.status, made.text).toBe(200);
      sim.inject(fault, 1, NOT_TOKEN);
      record(await call(gw, 'GET', `/v1/videos/${made.json.id}`, { key }));
      record(await call(gw, 'GET', `/v1/videos/${made.json.id}`, { key }));
    }
  });

  it('content: every status the vendor may answer for the bytes', async () => {
    const sim = sims.get(id)!;
    sim.settings['taskMs'] = 20;
    try {
      const made = await create(id);
      const done = await pollUntilDone(gw, key, made.json.id);
      record({ text: JSON.stringify(done) });
      expect(done.status).toBe('completed');
      for (const status of CONTENT_STATUSES) {
        sim.inject(echo(up, status), 1, NOT_TOKEN);
        const r = await call(gw, 'GET', `/v1/videos/${made.json.id}/content`, { key, headers: { range: 'bytes=0-99' } });
        if (r.status >= 400) record(r);
      }
    } finally {
      sim.settings['taskMs'] = 60_000;
    }
  });
});

describe.each(embeddingModules.map((m) => [m.id]))('canary through embeddings vendor %s', (id) => {
  it('every status and error code', async () => {
    const sim = sims.get(`emb-${id}`)!;
    const model = embeddingModules.find((m) => m.id === id)!.simulator.demo(sim).models.find((m) => m.capabilities.includes('embedding'))!.name;
    for (const fault of [...STATUSES.map((s) => echo(`emb-${id}`, s)), ...CODES.map((code) => echo(`emb-${id}`, 400, { code }))]) {
      sim.inject(fault);
      const r = await call(gw, 'POST', '/v1/embeddings', { key, body: { model, input: ['hello'] } });
      record(r);
      expect(r.status).toBeGreaterThanOrEqual(400);
    }
  });
});

describe('canary through chat', () => {
  const body = (stream: boolean) => ({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'hello' }] });

  it('streamed and not, every status, and an error event in the middle of a stream', async () => {
    const sim = sims.get('emb-openai')!;
    for (const stream of [false, true]) {
      for (const fault of [...STATUSES.map((s) => echo('emb-openai', s)), ...CODES.map((code) => echo('emb-openai', 400, { code }))]) {
        sim.inject(fault);
        const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: body(stream) });
        record(r);
        expect(r.status).toBeGreaterThanOrEqual(400);
      }
    }
    sim.inject(echo('emb-openai', 200, { sse: true }));
    const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: body(true) });
    expect(r.status).toBe(200);
    expect(r.text).toContain('"error"');
    record(r);
  });

  it('an error envelope answered 200 is the upstream failing, and a 200 completion quoting the credentials', async () => {
    const sim = sims.get('emb-openai')!;
    sim.inject(echo('emb-openai', 200));
    const failed = await call(gw, 'POST', '/v1/chat/completions', { key, body: body(false) });
    record(failed);
    expect(failed.status).toBe(502);
    expect(failed.json.error.code).toBe('upstream_error');
    sim.inject(echo('emb-openai', 200, { completion: true }));
    const r = await call(gw, 'POST', '/v1/chat/completions', { key, body: body(false) });
    record(r);
    expect(r.status).toBe(200);
    expect(r.json.choices[0].message.content).toContain('[redacted]');
  });
});

describe('the canary scan', () => {
  it('finds no credential in any response body or log line', async () => {
    await new Promise((r) => setTimeout(r, 50));
    gw.services.logger.flush();
    const credentials = allCredentials();
    // The scan is only worth something if the upstreams really quoted credentials and the gateway talked about it.
    expect(credentials.length).toBeGreaterThanOrEqual(videoModules.length + embeddingModules.length);
    for (const m of videoModules) expect(configured.get(`${m.vendor.id}-up`)!.length, m.vendor.id).toBeGreaterThan(0);
    expect(bodies.length).toBeGreaterThan(300);
    expect(logLines.some((l) => l.includes('attempt failed') || l.includes('failed'))).toBe(true);
    expect(bodies.some((b) => b.includes('[redacted]'))).toBe(true);

    // Each as the simulators also quote it: hex with colons (either case), percent-encoded.
    const spellings = credentials.flatMap((c) => [c, hexWithColons(c), hexWithColons(c).toUpperCase(), encodeURIComponent(c)]);
    expect(logLines.some((l) => l.includes(' as hex: '))).toBe(true);
    const leaks: string[] = [];
    for (const [where, texts] of [['response', bodies], ['log', logLines]] as const)
      for (const t of texts) for (const c of spellings) if (t.includes(c)) leaks.push(`${where}: ${c.slice(0, 12)}... in ${t.slice(0, 300)}`);
    expect(leaks).toEqual([]);

    // The echoes are longer than the messages the gateway keeps: where one was cut ("..."), no first
    // six characters (bytes, for the hex) of a credential in any of these spellings stand before the cut.
    const cuts = [...bodies, ...logLines].filter((t) => t.includes('...'));
    expect(cuts.length).toBeGreaterThan(0);
    const first = (c: string) => (c.includes(':') ? 17 : 6);
    for (const t of cuts)
      for (let p = t.indexOf('...'); p >= 0; p = t.indexOf('...', p + 3))
        for (const c of spellings)
          for (let k = first(c); k < c.length; k++) if (t.startsWith(c.slice(0, k), p - k)) leaks.push(`cut: ${c.slice(0, k)}... in ${t.slice(Math.max(0, p - 200), p + 3)}`);
    expect(leaks).toEqual([]);
  });
});
