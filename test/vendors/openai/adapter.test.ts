import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../src/http/types.js';
import type { Batch, BuildContext, EmbeddingRequest } from '../../../src/embeddings/types.js';
import { openaiVendor } from '../../../src/embeddings/vendors/openai/adapter.js';

function upstream(over: Partial<Upstream> = {}): Upstream {
  return { name: 'u', vendor: 'openai', baseUrl: 'https://api.example.com', apiKey: 'sk-x', models: [], priority: 1, weight: 1, timeoutMs: 1000, options: {}, ...over };
}
function req(over: Partial<EmbeddingRequest> = {}): EmbeddingRequest {
  return { model: 'text-embedding-3-small', inputs: ['a', 'b'], encodingFormat: 'float', extra: {}, ...over };
}
const batch = (inputs: EmbeddingRequest['inputs']): Batch => ({ offset: 0, inputs, tokens: inputs.map(() => 1) });
const ctx = (r: EmbeddingRequest, up: Upstream, upstreamModel = r.model): BuildContext => ({ req: r, up, upstreamModel });

describe('openai adapter: requests', () => {
  it('builds the OpenAI body with Bearer auth on /v1/embeddings', () => {
    const r = req({ encodingFormat: 'base64', dimensions: 512, user: 'u1', extra: { custom: { deep: 1 } } });
    const built = openaiVendor.build(batch(['a', 'b']), ctx(r, upstream()));
    expect(built.request.url).toBe('https://api.example.com/v1/embeddings');
    expect(built.request.headers['authorization']).toBe('Bearer sk-x');
    expect(built.request.body).toEqual({
      input: ['a', 'b'],
      encoding_format: 'base64',
      model: 'text-embedding-3-small',
      dimensions: 512,
      user: 'u1',
      custom: { deep: 1 },
    });
    expect(built.passthroughFormat).toBe('base64');
  });

  it('appends only /embeddings to a base_url that already has a path', () => {
    const up = upstream({ baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai' });
    expect(openaiVendor.build(batch(['a']), ctx(req(), up)).request.url).toBe('https://generativelanguage.googleapis.com/v1beta/openai/embeddings');
  });

  it("speaks Azure's deployment and v1 forms with the api-key header", () => {
    const legacy = upstream({ options: { api_version: '2024-10-21' } });
    const b1 = openaiVendor.build(batch(['a']), ctx(req(), legacy, 'my deploy'));
    expect(b1.request.url).toBe('https://api.example.com/openai/deployments/my%20deploy/embeddings?api-version=2024-10-21');
    expect(b1.request.headers).toMatchObject({ 'api-key': 'sk-x' });
    expect(b1.request.headers['authorization']).toBeUndefined();
    expect((b1.request.body as Record<string, unknown>)['model']).toBeUndefined();
    const v1 = openaiVendor.build(batch(['a']), ctx(req(), upstream({ name: 'v1', options: { azure: true } }), 'dep'));
    expect(v1.request.url).toBe('https://api.example.com/openai/v1/embeddings');
    expect((v1.request.body as Record<string, unknown>)['model']).toBe('dep');
  });

  it('asks floats from a server without base64 support, and follows an extra_body override', () => {
    const noB64 = upstream({ name: 'nob64', options: { supports_base64: false } });
    const b = openaiVendor.build(batch(['a']), ctx(req({ encodingFormat: 'base64' }), noB64));
    expect((b.request.body as Record<string, unknown>)['encoding_format']).toBe('float');
    expect(b.passthroughFormat).toBe('float');
    const o = openaiVendor.build(batch(['a']), ctx(req({ encodingFormat: 'float', extra: { encoding_format: 'base64' } }), upstream()));
    expect(o.passthroughFormat).toBe('base64');
  });

  it('refuses non-text input types and honours configured batch limits', () => {
    expect(() => openaiVendor.validate!(req({ inputType: 'image' }), 'm', upstream())).toThrow(/input_type/);
    expect(() => openaiVendor.validate!(req({ inputType: 'text' }), 'm', upstream())).not.toThrow();
    expect(openaiVendor.limits('m', upstream())).toEqual({ maxItems: 2048, maxTokens: 300000 });
    expect(openaiVendor.limits('m', upstream({ options: { max_batch: 16, max_batch_tokens: 1000 } }))).toEqual({ maxItems: 16, maxTokens: 1000 });
  });
});

describe('openai adapter: answers', () => {
  const res = (status: number, json: unknown, headers: Record<string, string> = {}) => ({ status, headers, json: json as never, text: JSON.stringify(json) });

  it('orders data by index and reads usage', () => {
    const out = openaiVendor.parse(
      res(200, { data: [{ index: 1, embedding: 'QUJD' }, { index: 0, embedding: [0.5] }], usage: { prompt_tokens: 4 } }),
      batch(['a', 'b']),
      ctx(req(), upstream()),
    );
    expect(out).toEqual({ vectors: [[0.5], 'QUJD'], promptTokens: 4 });
  });

  it('rejects answers that leave an input without a vector', () => {
    expect(() => openaiVendor.parse(res(200, { data: [{ index: 0, embedding: [1] }] }), batch(['a', 'b']), ctx(req(), upstream()))).toThrow();
    expect(() => openaiVendor.parse(res(200, { data: [{ index: 5, embedding: [1] }] }), batch(['a']), ctx(req(), upstream()))).toThrow();
    expect(() => openaiVendor.parse(res(200, { nope: true }), batch(['a']), ctx(req(), upstream()))).toThrow();
  });

  it('rejects answers with two vectors for one input, whichever comes last', () => {
    const twice = { data: [{ index: 0, embedding: [1] }, { index: 1, embedding: [2] }, { index: 1, embedding: [3] }], usage: { prompt_tokens: 2 } };
    expect(() => openaiVendor.parse(res(200, twice), batch(['a', 'b']), ctx(req(), upstream()))).toThrow('two vectors for input 1');
    // Without indexes an item's position is its index: a second item at an indexed position is a second vector too.
    const mixed = { data: [{ index: 1, embedding: [1] }, { embedding: [2] }] };
    expect(() => openaiVendor.parse(res(200, mixed), batch(['a', 'b']), ctx(req(), upstream()))).toThrow('two vectors for input 1');
  });

  it('classifies errors', () => {
    const err = (status: number, code: string | null, headers: Record<string, string> = {}) =>
      openaiVendor.classifyError(res(status, { error: { message: `m${status}`, type: 't', param: 'input', code } }, headers));
    expect(err(400, null)).toEqual({ kind: 'client', status: 400, message: 'm400', param: 'input' });
    expect(err(400, 'content_filter').kind).toBe('moderation');
    expect(err(401, 'invalid_api_key').kind).toBe('auth');
    expect(err(429, 'insufficient_quota').kind).toBe('auth');
    // Kept exact here; the Retry-After the client sees is rounded up where it is written.
    expect(err(429, 'rate_limit_exceeded', { 'retry-after-ms': '1500' })).toMatchObject({ kind: 'retryable', retryAfterSeconds: 1.5 });
    expect(err(404, 'model_not_found').kind).toBe('retryable');
    expect(err(503, null).kind).toBe('retryable');
    expect(err(413, null)).toMatchObject({ kind: 'client', status: 413 });
  });
});
