import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../src/http/types.js';
import type { EmbeddingRequest } from '../../../src/embeddings/types.js';
import { vertexVendor } from '../../../src/embeddings/vendors/vertex/adapter.js';

const up: Upstream = {
  name: 'v', vendor: 'vertex', baseUrl: 'https://us-central1-aiplatform.googleapis.com', models: [], priority: 1, weight: 1, timeoutMs: 1000,
  options: { project: 'my-proj', location: 'us-central1', access_token: 't' },
};
const req = (over: Partial<EmbeddingRequest> = {}): EmbeddingRequest => ({ model: 'text-embedding-005', inputs: ['a'], encodingFormat: 'float', extra: {}, ...over });
const batch = (inputs: string[]) => ({ offset: 0, inputs, tokens: inputs.map(() => 1) });

describe('vertex adapter', () => {
  it('builds :predict with snake_case instances and camelCase parameters', () => {
    const r = req({ taskType: 'RETRIEVAL_DOCUMENT', title: 'T', dimensions: 128, extra: { autoTruncate: false, parameters: { foo: 1 } } });
    const b = vertexVendor.build(batch(['x', 'y']), { req: r, up, upstreamModel: 'text-embedding-005' });
    expect(b.request.url).toBe(
      'https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1/publishers/google/models/text-embedding-005:predict',
    );
    expect(b.request.body).toEqual({
      instances: [
        { content: 'x', task_type: 'RETRIEVAL_DOCUMENT', title: 'T' },
        { content: 'y', task_type: 'RETRIEVAL_DOCUMENT', title: 'T' },
      ],
      parameters: { outputDimensionality: 128, foo: 1, autoTruncate: false },
    });
    expect(b.passthroughFormat).toBeUndefined();
  });

  it('sends no parameters object when there is nothing to say', () => {
    expect(vertexVendor.build(batch(['x']), { req: req(), up, upstreamModel: 'text-embedding-005' }).request.body).toEqual({ instances: [{ content: 'x' }] });
  });

  it('allows one instance per call for gemini-embedding models', () => {
    expect(vertexVendor.limits('gemini-embedding-001', up)).toEqual({ maxItems: 1 });
    expect(vertexVendor.limits('text-embedding-005', up)).toEqual({ maxItems: 250, maxTokens: 20000 });
  });

  it('sums token_count, floats included', () => {
    const json = {
      predictions: [
        { embeddings: { values: [0.1], statistics: { token_count: 7.0, truncated: false } } },
        { embeddings: { values: [0.2], statistics: { token_count: 2.5 } } },
      ],
    };
    const out = vertexVendor.parse({ status: 200, headers: {}, json: json as never, text: '' }, batch(['a', 'b']), { req: req(), up, upstreamModel: 'm' });
    expect(out).toEqual({ vectors: [[0.1], [0.2]], promptTokens: 10 });
  });

  it('builds :embedContent for Gemini Embedding 2 and reads embedding.values with usageMetadata', () => {
    const r = req({ model: 'g2', taskType: 'RETRIEVAL_DOCUMENT', title: 'T', dimensions: 256, extra: { parameters: { autoTruncate: false } } });
    const ctx = { req: r, up, upstreamModel: 'gemini-embedding-2-preview' };
    const b = vertexVendor.build(batch(['x']), ctx);
    expect(b.request.url).toBe(
      'https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-embedding-2-preview:embedContent',
    );
    expect(b.request.body).toEqual({ content: { parts: [{ text: 'x' }] }, taskType: 'RETRIEVAL_DOCUMENT', title: 'T', outputDimensionality: 256, autoTruncate: false });
    expect(vertexVendor.limits('gemini-embedding-2-preview', up)).toEqual({ maxItems: 1 });
    const json = { embedding: { values: [0.5, 0.25] }, usageMetadata: { promptTokenCount: 4 }, truncated: false };
    expect(vertexVendor.parse({ status: 200, headers: {}, json, text: '' }, batch(['x']), ctx)).toEqual({ vectors: [[0.5, 0.25]], promptTokens: 4 });
    expect(() => vertexVendor.parse({ status: 200, headers: {}, json: { predictions: [] }, text: '' }, batch(['x']), ctx)).toThrow(/embedding/);
  });

  it('classifies Google errors by status name', () => {
    const e = (code: number, status: string) =>
      vertexVendor.classifyError({ status: code, headers: {}, json: { error: { code, message: 'msg', status } }, text: '' }).kind;
    expect(e(400, 'INVALID_ARGUMENT')).toBe('client');
    expect(e(400, 'FAILED_PRECONDITION')).toBe('client');
    expect(e(401, 'UNAUTHENTICATED')).toBe('auth');
    expect(e(403, 'PERMISSION_DENIED')).toBe('auth');
    expect(e(429, 'RESOURCE_EXHAUSTED')).toBe('retryable');
    expect(e(503, 'UNAVAILABLE')).toBe('retryable');
    expect(e(404, 'NOT_FOUND')).toBe('retryable');
  });

  it('hands a broken credential config to failover instead of crashing', async () => {
    const bare = { ...up, name: 'bare', options: { project: 'p' } };
    const src = vertexVendor.credentials!(bare, {} as never);
    await expect(src.headers()).rejects.toThrow(/bare/);
  });
});
