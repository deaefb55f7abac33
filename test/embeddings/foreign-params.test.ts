import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModule as bedrock } from '../../src/embeddings/vendors/bedrock/index.js';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import { embeddingModule as vertex } from '../../src/embeddings/vendors/vertex/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { MAX_EXTRA_CHARS } from '../../src/embeddings/request.js';
import { post, startHarness, type Harness } from './harness.js';

const OPENAI = 'text-embedding-3-small';
const VERTEX = 'text-embedding-005';
const MARENGO = 'us.twelvelabs.marengo-embed-2-7-v1:0';

/**
 * Spec 2.3 rule 3 / 7.2 on POST /v1/embeddings: a native parameter of another vendor, sent as an
 * unknown top-level field or an `extra_body` key, is a 400 `unsupported_parameter` naming the field,
 * before any upstream call and with nothing charged; the model's own vendor's names still pass.
 */
describe('embeddings: parameters owned by another vendor', () => {
  const sims: Record<'openai' | 'vertex' | 'bedrock', SimServer> = {} as never;
  let h: Harness;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    sims.openai = await openai.simulator.start();
    sims.vertex = await vertex.simulator.start();
    sims.bedrock = await bedrock.simulator.start();
    h = await startHarness([
      { module: openai, sim: sims.openai, models: [OPENAI] },
      { module: vertex, sim: sims.vertex, models: [VERTEX] },
      { module: bedrock, sim: sims.bedrock, models: [MARENGO] },
    ]);
    ({ key, accountId } = await h.newKey(100));
  });
  afterAll(async () => {
    await h.close();
    for (const s of Object.values(sims)) await s.close();
  });
  afterEach(() => {
    for (const s of Object.values(sims)) s.reset();
  });

  const upstreamCalls = () => Object.values(sims).reduce((n, s) => n + s.requests.length, 0);

  it.each([
    [OPENAI, { autoTruncate: false }, 'autoTruncate', 'Vertex AI'],
    [OPENAI, { outputDimensionality: 256 }, 'outputDimensionality', 'Vertex AI'],
    [OPENAI, { extra_body: { autoTruncate: false } }, 'extra_body.autoTruncate', 'Vertex AI'],
    [OPENAI, { extra_body: { outputDimensionality: 256 } }, 'extra_body.outputDimensionality', 'Vertex AI'],
    [OPENAI, { embeddingOption: ['visual-text'] }, 'embeddingOption', 'Amazon Bedrock'],
    [OPENAI, { extra_body: { textTruncate: 'none' } }, 'extra_body.textTruncate', 'Amazon Bedrock'],
    [MARENGO, { extra_body: { parameters: { autoTruncate: false } } }, 'extra_body.parameters', 'Vertex AI'],
    [MARENGO, { outputDimensionality: 1024 }, 'outputDimensionality', 'Vertex AI'],
    [VERTEX, { textTruncate: 'end' }, 'textTruncate', 'Amazon Bedrock'],
    [VERTEX, { extra_body: { inputText: 'another text' } }, 'extra_body.inputText', 'Amazon Bedrock'],
  ])('%s with %j: 400 unsupported_parameter, param %s, nothing sent or charged', async (model, extra, param, owner) => {
    const before = await h.balance(accountId);
    const r = await post(h, key, { model, input: 'hello', ...extra });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_parameter', param });
    expect(r.json.error.message).toContain(owner);
    expect(upstreamCalls()).toBe(0);
    expect(await h.balance(accountId)).toBe(before);
  });

  it("accepts the model's own vendor's names and forwards them", async () => {
    const v = await post(h, key, { model: VERTEX, input: 'hello', extra_body: { autoTruncate: false } });
    expect(v.status).toBe(200);
    expect(sims.vertex.requests[0]!.json.parameters).toMatchObject({ autoTruncate: false });

    const b = await post(h, key, { model: MARENGO, input: 'hello', textTruncate: 'end' });
    expect(b.status).toBe(200);
    expect(sims.bedrock.requests[0]!.json).toMatchObject({ inputText: 'hello', textTruncate: 'end' });
  });

  it('passes names no vendor owns, and common names, to every model', async () => {
    const r = await post(h, key, { model: OPENAI, input: 'hello', extra_body: { some_new_option: 1 }, dimensions: 256 });
    expect(r.status).toBe(200);
    expect(sims.openai.requests[0]!.json).toMatchObject({ some_new_option: 1, dimensions: 256 });
  });

  it('extra_body and unknown fields of more than 64 Ki characters are a 400 before any call, nothing charged', async () => {
    const { key, accountId } = await h.newKey(10);
    const before = await h.balance(accountId);
    const calls = Object.values(sims).map((s) => s.requests.length);
    for (const body of [
      { model: OPENAI, input: 'x', extra_body: { junk: 'x'.repeat(MAX_EXTRA_CHARS) } },
      { model: OPENAI, input: 'x', junk: 'x'.repeat(MAX_EXTRA_CHARS) },
      { model: OPENAI, input: 'x', a: 'x'.repeat(MAX_EXTRA_CHARS / 2), extra_body: { b: 'y'.repeat(MAX_EXTRA_CHARS / 2) } },
    ]) {
      const r = await post(h, key, body);
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'extra_body_too_large', param: 'extra_body' });
    }
    expect(Object.values(sims).map((s) => s.requests.length)).toEqual(calls);
    expect(await h.balance(accountId)).toBe(before);
    // Just under the limit is an ordinary request.
    const ok = await post(h, key, { model: OPENAI, input: 'x', extra_body: { junk: 'x'.repeat(MAX_EXTRA_CHARS - 100) } });
    expect(ok.status, ok.text.slice(0, 200)).toBe(200);
  });
});
