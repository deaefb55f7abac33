import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { costForTokens, toMicros } from '../../../src/core/money.js';
import { simTokens } from '../../../src/sim/vectors.js';
import { embeddingModule as vertex } from '../../../src/embeddings/vendors/vertex/index.js';
import { VERTEX_SIM_TOKEN, vertexSimVector } from '../../../src/embeddings/vendors/vertex/simulator.js';
import { SimServer } from '../../../src/sim/framework.js';
import { generateKeyPairSync } from 'node:crypto';
import { asFloat32, post, startHarness, type Harness } from '../../embeddings/harness.js';

const EMBED_CONTENT = /^\/v1\/projects\/sim-project\/locations\/us-central1\/publishers\/google\/models\/gemini-embedding-2-preview:embedContent$/;
const PREDICT = /^\/v1\/projects\/sim-project\/locations\/us-central1\/publishers\/google\/models\/([^/:]+):predict$/;

describe('embeddings through Vertex AI :predict', () => {
  let sim: SimServer;
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    sim = await vertex.simulator.start();
    h = await startHarness([{ module: vertex, sim, options: { concurrency: 3 } }]);
    ({ key } = await h.newKey(100));
  });
  afterAll(async () => {
    await h.close();
    await sim.close();
  });
  afterEach(() => sim.reset());

  it('places task_type and title on every instance and dimensions in parameters', async () => {
    const inputs = ['how to bake bread', 'sourdough starter guide'];
    const r = await post(h, key, {
      model: 'text-embedding-005',
      input: inputs,
      task_type: 'RETRIEVAL_DOCUMENT',
      title: 'Baking notes',
      dimensions: 256,
    });
    expect(r.status).toBe(200);
    const got = sim.received('POST', PREDICT);
    expect(got).toHaveLength(1);
    expect(got[0]!.headers['authorization']).toBe('Bearer ya29.sim-vertex-token');
    expect(got[0]!.json).toEqual({
      instances: inputs.map((content) => ({ content, task_type: 'RETRIEVAL_DOCUMENT', title: 'Baking notes' })),
      parameters: { outputDimensionality: 256 },
    });
    r.json.data.forEach((d: any, i: number) => {
      expect(d.index).toBe(i);
      expect(d.embedding).toHaveLength(256);
      expect(asFloat32(d.embedding)).toEqual(vertexSimVector('text-embedding-005', inputs[i]!, 'RETRIEVAL_DOCUMENT', 'Baking notes', 256));
    });
    expect(r.json.model).toBe('text-embedding-005');
  });

  it('fans gemini-embedding-001 out one instance per call, keeps order, and sums token_count (floats included)', async () => {
    sim.settings['floatTokenCounts'] = 'always';
    const inputs = ['one', 'two two', 'three three three', 'four', 'five five'];
    const r = await post(h, key, { model: 'gemini-embedding-001', input: inputs, task_type: 'RETRIEVAL_QUERY' });
    expect(r.status).toBe(200);
    const calls = sim.received('POST', PREDICT);
    expect(calls).toHaveLength(5);
    for (const c of calls) expect(c.json.instances).toHaveLength(1);
    expect(calls.map((c) => c.json.instances[0].content).sort()).toEqual([...inputs].sort());
    r.json.data.forEach((d: any, i: number) =>
      expect(asFloat32(d.embedding)).toEqual(vertexSimVector('gemini-embedding-001', inputs[i]!, 'RETRIEVAL_QUERY')),
    );
    const tokens = inputs.reduce((s, t) => s + simTokens(t), 0);
    expect(r.json.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens, cost: expect.any(Number) });
    delete sim.settings['floatTokenCounts'];
  });

  it('sends Gemini Embedding 2 to :embedContent (it has no :predict), one content per call, billing usageMetadata', async () => {
    const { key: k, accountId } = await h.newKey(1);
    const inputs = ['first text', 'second, longer text'];
    const r = await post(h, k, { model: 'gemini-embedding-2-preview', input: inputs, task_type: 'RETRIEVAL_QUERY', dimensions: 768 });
    expect(r.status).toBe(200);
    expect(sim.received('POST', PREDICT)).toHaveLength(0);
    const calls = sim.received('POST', EMBED_CONTENT);
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => c.json).sort((a, b) => a.content.parts[0].text.localeCompare(b.content.parts[0].text))).toEqual(
      inputs.map((text) => ({ content: { parts: [{ text }] }, taskType: 'RETRIEVAL_QUERY', outputDimensionality: 768 })),
    );
    r.json.data.forEach((d: any, i: number) =>
      expect(asFloat32(d.embedding)).toEqual(vertexSimVector('gemini-embedding-2-preview', inputs[i]!, 'RETRIEVAL_QUERY', undefined, 768)),
    );
    const tokens = inputs.reduce((s, t) => s + simTokens(t), 0);
    expect(r.json.usage.prompt_tokens).toBe(tokens);
    expect(toMicros(1) - (await h.balance(accountId))).toBe(costForTokens(toMicros(0.2), tokens));
  });

  it('the simulator refuses :predict for Gemini Embedding 2, as the adapter must not send it', async () => {
    const res = await fetch(`${sim.url}/v1/projects/sim-project/locations/us-central1/publishers/google/models/gemini-embedding-2-preview:predict`, {
      method: 'POST',
      headers: { authorization: `Bearer ${VERTEX_SIM_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ instances: [{ content: 'x' }] }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.status).toBe('FAILED_PRECONDITION');
  });

  it('gives the official SDK base64 float32 built from the floats Vertex returned', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    const res = await client.embeddings.create({ model: 'text-embedding-005', input: ['query text'] });
    expect(Float32Array.from(res.data[0]!.embedding)).toEqual(vertexSimVector('text-embedding-005', 'query text'));
  });

  it('bills the summed token counts', async () => {
    const { key: k, accountId } = await h.newKey(1);
    const inputs = ['alpha beta gamma', 'delta'];
    const r = await post(h, k, { model: 'gemini-embedding-001', input: inputs });
    expect(r.status).toBe(200);
    const tokens = inputs.reduce((s, t) => s + simTokens(t), 0);
    expect(toMicros(1) - (await h.balance(accountId))).toBe(costForTokens(toMicros(0.15), tokens));
  });

  it('merges extra_body into parameters', async () => {
    const r = await post(h, key, { model: 'text-embedding-005', input: 'x', extra_body: { autoTruncate: false } });
    expect(r.status).toBe(200);
    expect(sim.lastReceived('POST', PREDICT)!.json.parameters).toEqual({ autoTruncate: false });
  });

  it('refuses a gs:// location anywhere in extra_body (Vertex would read it as the gateway), before any call or charge', async () => {
    const { key: own, accountId } = await h.newKey(1);
    sim.reset();
    for (const extra_body of [
      { instances: [{ image: { gcsUri: 'gs://private-bucket/secret.png' } }] },
      { instances: [{ video: { gcsUri: '  GS://private-bucket/clip.mp4' } }] },
    ]) {
      const r = await post(h, own, { model: 'text-embedding-005', input: 'x', extra_body });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'media_location_not_allowed', param: 'extra_body' });
    }
    expect(sim.requests).toHaveLength(0);
    expect(await h.balance(accountId)).toBe(toMicros(1));
  });

  it('refuses an extra_body that would replace the text to embed (the gateway counts and bills input), before any call or charge', async () => {
    const { key: own, accountId } = await h.newKey(1);
    sim.reset();
    const long = 'a much longer text than the input '.repeat(500);
    const cases: [string, Record<string, unknown>, string][] = [
      ['text-embedding-005', { instances: { content: long } }, 'extra_body.instances.content'],
      ['gemini-embedding-2-preview', { content: { parts: [{ text: long }] } }, 'extra_body.content'],
      ['gemini-embedding-2-preview', { parameters: { content: { parts: [{ text: long }] } } }, 'extra_body.parameters.content'],
    ];
    for (const [model, extra_body, param] of cases) {
      const r = await post(h, own, { model, input: 'x', extra_body });
      expect(r.status, `${param}: ${JSON.stringify(r.json).slice(0, 300)}`).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'input_in_extra_body', param });
    }
    // The SDKs' extra_body sends its keys at the top level: the same refusal.
    const top = await post(h, own, { model: 'gemini-embedding-2-preview', input: 'x', content: { parts: [{ text: long }] } });
    expect(top.json.error).toMatchObject({ code: 'input_in_extra_body', param: 'extra_body.content' });
    expect(sim.requests).toHaveLength(0);
    expect(await h.balance(accountId)).toBe(toMicros(1));
    // Other instance fields still merge.
    const ok = await post(h, own, { model: 'text-embedding-005', input: 'x', extra_body: { instances: { task_type: 'CLUSTERING' } } });
    expect(ok.status).toBe(200);
    expect(sim.lastReceived('POST', PREDICT)!.json.instances).toEqual([{ content: 'x', task_type: 'CLUSTERING' }]);
  });

  it('an answer with an empty vector or vectors of different sizes is an upstream failure: 502, nothing charged', async () => {
    const { key: own, accountId } = await h.newKey(100);
    const before = await h.balance(accountId);
    const answers = [
      { predictions: [{ embeddings: { values: [] } }, { embeddings: { values: [] } }] },
      { predictions: [{ embeddings: { values: [0.1] } }, { embeddings: { values: [0.1, 0.2, 0.3] } }] },
    ];
    for (const json of answers) {
      sim.inject({ kind: 'status', status: 200, json });
      const r = await post(h, own, { model: 'text-embedding-005', input: ['a', 'b'] });
      expect(r.status).toBe(502);
      expect(r.json.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
    }
    // One call per input (gemini-embedding-001): each answer sound alone, but not the same size.
    sim.inject({ kind: 'status', status: 200, json: { predictions: [{ embeddings: { values: [0.1, 0.2] } }] } });
    sim.inject({ kind: 'status', status: 200, json: { predictions: [{ embeddings: { values: [0.1, 0.2, 0.3] } }] } });
    const r = await post(h, own, { model: 'gemini-embedding-001', input: ['a', 'b'] });
    expect(r.status).toBe(502);
    expect(await h.balance(accountId)).toBe(before);
  });

  it('refuses what Vertex cannot take before calling it', async () => {
    const cases: [unknown, string][] = [
      [{ model: 'text-embedding-005', input: [[1, 2, 3]] }, 'input'],
      [{ model: 'text-embedding-005', input: 'x', title: 'T' }, 'title'],
      [{ model: 'text-embedding-005', input: 'x', input_type: 'image' }, 'input_type'],
    ];
    for (const [body, param] of cases) {
      const r = await post(h, key, body);
      expect(r.status).toBe(400);
      expect(r.json.error.param).toBe(param);
    }
    expect(sim.requests).toHaveLength(0);
  });

  it("maps Vertex's INVALID_ARGUMENT to a 400 and its 429 to a failed upstream", async () => {
    const r1 = await post(h, key, { model: 'text-embedding-005', input: 'x', task_type: 'NOT_A_TASK' });
    expect(r1.status).toBe(400);
    expect(r1.json.error.message).toContain('task_type');
    sim.inject({ kind: 'status', status: 429, json: { error: { code: 429, message: 'Quota exceeded', status: 'RESOURCE_EXHAUSTED' } } });
    const r2 = await post(h, key, { model: 'text-embedding-005', input: 'x' });
    expect(r2.status).toBe(502);
  });
});

describe('Vertex credentials', () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  it('mints an access token from a service account, caches it, and falls over when the token endpoint refuses', async () => {
    const tokens = await SimServer.start('google-token', (req) => {
      const assertion = new URLSearchParams(req.raw.toString()).get('assertion') ?? '';
      const claims = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString() || '{}');
      if (claims.iss === 'refused@sim.iam.gserviceaccount.com') return { status: 400, json: { error: 'invalid_grant', error_description: 'Invalid JWT' } };
      return { json: { access_token: VERTEX_SIM_TOKEN, expires_in: 3600, token_type: 'Bearer' } };
    });
    const sim = await vertex.simulator.start();
    const account = (email: string) => ({ client_email: email, private_key: pem, token_uri: `${tokens.url}/token` });
    const h = await startHarness([
      { module: vertex, sim, name: 'refused', priority: 1, options: { access_token: null, service_account: account('refused@sim.iam.gserviceaccount.com') } },
      { module: vertex, sim, name: 'minted', priority: 2, options: { access_token: null, service_account: account('ok@sim.iam.gserviceaccount.com') } },
      { module: vertex, sim, name: 'no-project', priority: 0, options: { project: null } },
    ]);
    try {
      const { key } = await h.newKey(1);
      for (const input of ['first', 'second']) {
        const r = await post(h, key, { model: 'text-embedding-005', input });
        expect(r.status).toBe(200);
      }
      // Two predict calls, both with the minted token. The good account's token was fetched once and
      // reused; the refused account was retried on each request (nothing to cache).
      expect(sim.received('POST', PREDICT)).toHaveLength(2);
      const issuers = tokens.received('POST', '/token').map((r) => {
        const assertion = new URLSearchParams(r.raw.toString()).get('assertion')!;
        return JSON.parse(Buffer.from(assertion.split('.')[1]!, 'base64url').toString()).iss;
      });
      expect(issuers.filter((i) => i.startsWith('ok@'))).toHaveLength(1);
      expect(issuers.filter((i) => i.startsWith('refused@'))).toHaveLength(2);
    } finally {
      await h.close();
      await sim.close();
      await tokens.close();
    }
  });

  it('fails over when this upstream token is refused', async () => {
    const sim = await vertex.simulator.start();
    const other = await vertex.simulator.start();
    const h = await startHarness([
      { module: vertex, sim, name: 'wrong-token', priority: 1, options: { access_token: 'expired-token' } },
      { module: vertex, sim: other, name: 'right-token', priority: 2 },
    ]);
    try {
      const { key } = await h.newKey(1);
      const r = await post(h, key, { model: 'text-embedding-005', input: 'x' });
      expect(r.status).toBe(200);
      expect(sim.requests).toHaveLength(1);
      expect(other.requests).toHaveLength(1);
    } finally {
      await h.close();
      await sim.close();
      await other.close();
    }
  });
});
