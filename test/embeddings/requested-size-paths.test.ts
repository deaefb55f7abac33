import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import type { Upstream } from '../../src/http/types.js';
import { parseEmbeddingRequest } from '../../src/embeddings/request.js';
import { dimensionsParam, requestedDimensions } from '../../src/embeddings/requested-dimensions.js';
import type { EmbeddingVendor } from '../../src/embeddings/types.js';
import { openaiVendor } from '../../src/embeddings/vendors/openai/adapter.js';
import { vertexVendor } from '../../src/embeddings/vendors/vertex/adapter.js';

/**
 * The size the gateway holds an answer to is the size its adapter sends: for every mix of a
 * top-level `dimensions` and the vendor's own size field in `extra_body` or at the top level, the
 * value in the built body and `requestedDimensions` agree, and the param names where it was written.
 */
const up = (vendor: string): Upstream => ({
  name: 'u', vendor, baseUrl: 'https://up.example', apiKey: 'k', models: [], priority: 1, weight: 1, timeoutMs: 1000,
  options: { project: 'p', location: 'us-central1', access_token: 't' },
});

/** The size in the body the adapter builds, where each vendor reads it. */
function sentSize(vendor: EmbeddingVendor, body: JsonObject, upstreamModel: string): unknown {
  const built = vendor.build({ offset: 0, inputs: ['x'], tokens: [1] }, { req: parseEmbeddingRequest(body), up: up(vendor.id), upstreamModel }).request.body as JsonObject;
  if (vendor.id === 'openai') return built['dimensions'];
  if (upstreamModel.startsWith('gemini-embedding-2')) return built['outputDimensionality'];
  return (built['parameters'] as JsonObject | undefined)?.['outputDimensionality'];
}

const VENDORS: Record<string, EmbeddingVendor> = { openai: openaiVendor, vertex: vertexVendor };

const cases: [string, string, JsonObject, string | undefined][] = [
  ['openai', 'text-embedding-3-small', { dimensions: 256 }, 'dimensions'],
  ['openai', 'text-embedding-3-small', { extra_body: { dimensions: 64 } }, 'extra_body.dimensions'],
  ['openai', 'text-embedding-3-small', { dimensions: 256, extra_body: { dimensions: 64 } }, 'extra_body.dimensions'],
  // OpenAI's body has no outputDimensionality: the top-level size is the one sent.
  ['openai', 'text-embedding-3-small', { dimensions: 256, extra_body: { outputDimensionality: 64 } }, 'dimensions'],
  // A size that is no positive integer is the vendor's to judge: nothing to hold the answer to.
  ['openai', 'text-embedding-3-small', { dimensions: 256, extra_body: { dimensions: '64' } }, undefined],
  ['openai', 'text-embedding-3-small', { extra_body: { dimensions: null } }, undefined],
  ['vertex', 'text-embedding-005', { dimensions: 256, extra_body: { dimensions: 64 } }, 'dimensions'],
  ['vertex', 'text-embedding-005', { dimensions: 256, extra_body: { parameters: { outputDimensionality: 64 } } }, 'extra_body.parameters.outputDimensionality'],
  ['vertex', 'text-embedding-005', { outputDimensionality: 32, parameters: { outputDimensionality: 64 } }, 'outputDimensionality'],
  ['vertex', 'text-embedding-005', { extra_body: { parameters: { outputDimensionality: 64 }, outputDimensionality: 32 } }, 'extra_body.outputDimensionality'],
  ['vertex', 'text-embedding-005', { dimensions: 256, extra_body: { parameters: { autoTruncate: true } } }, 'dimensions'],
  // :embedContent merges both into the body in the client's order: the later one wins.
  ['vertex', 'gemini-embedding-2-preview', { extra_body: { outputDimensionality: 32, parameters: { outputDimensionality: 64 } } }, 'extra_body.parameters.outputDimensionality'],
  ['vertex', 'gemini-embedding-2-preview', { extra_body: { parameters: { outputDimensionality: 64 }, outputDimensionality: 32 } }, 'extra_body.outputDimensionality'],
  ['vertex', 'gemini-embedding-2-preview', { dimensions: 256, outputDimensionality: 16 }, 'outputDimensionality'],
];

describe('the size held is the size sent', () => {
  it.each(cases)('%s %s %j', (vendorId, upstreamModel, fields, param) => {
    const vendor = VENDORS[vendorId]!;
    const body = { model: 'm', input: 'x', ...fields };
    const asked = requestedDimensions(vendor, parseEmbeddingRequest(body), upstreamModel);
    const sent = sentSize(vendor, body, upstreamModel);
    if (param === undefined) {
      expect(asked).toBeUndefined();
      return;
    }
    expect(asked?.size).toBe(sent);
    expect(dimensionsParam(asked!, body)).toBe(param);
  });

  it('a vendor without a size field of its own is held to the top-level size only', () => {
    const plain = { ...openaiVendor, dimensionsPath: undefined };
    expect(requestedDimensions(plain, parseEmbeddingRequest({ model: 'm', input: 'x', dimensions: 8, extra_body: { dimensions: 4 } }), 'm')).toEqual({ size: 8 });
    expect(requestedDimensions(plain, parseEmbeddingRequest({ model: 'm', input: 'x' }), 'm')).toBeUndefined();
  });
});
