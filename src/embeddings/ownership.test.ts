import { describe, expect, it } from 'vitest';
import { GatewayError } from '../core/errors.js';
import type { Upstream } from '../http/types.js';
import { checkOwnership, COMMON_EMBEDDING_PARAMS, paramOwners } from './ownership.js';
import { parseEmbeddingRequest } from './request.js';
import { embeddingModules, embeddingVendors } from './vendors/registry.js';

const owners = paramOwners(embeddingVendors.values());
const on = (...vendors: string[]) => vendors.map((vendor) => ({ vendor }) as Upstream);

function refusal(body: Record<string, unknown>, candidates: Upstream[]): GatewayError | undefined {
  try {
    checkOwnership(parseEmbeddingRequest(body as never), body as never, candidates, owners);
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  return undefined;
}

describe('checkOwnership (embeddings)', () => {
  it("refuses another vendor's name where the client wrote it", () => {
    expect(refusal({ model: 'm', input: 'x', autoTruncate: true }, on('openai'))).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      code: 'unsupported_parameter',
      param: 'autoTruncate',
    });
    expect(refusal({ model: 'm', input: 'x', extra_body: { textTruncate: 'end' } }, on('vertex'))?.param).toBe('extra_body.textTruncate');
    // Both spellings: the literal extra_body wins (request.ts), so that is the one named.
    expect(refusal({ model: 'm', input: 'x', instances: 1, extra_body: { instances: {} } }, on('bedrock'))?.param).toBe('extra_body.instances');
  });

  it("accepts the model's own names, names nobody owns and the common ones", () => {
    expect(refusal({ model: 'm', input: 'x', extra_body: { autoTruncate: true, parameters: {} } }, on('vertex'))).toBeUndefined();
    expect(refusal({ model: 'm', input: 'x', textTruncate: 'end', bucketOwner: '1' }, on('bedrock'))).toBeUndefined();
    expect(refusal({ model: 'm', input: 'x', normalize: true }, on('bedrock'))).toBeUndefined();
    const common = Object.fromEntries([...COMMON_EMBEDDING_PARAMS].map((k) => [k, 'v']));
    expect(refusal({ model: 'm', input: 'x', extra_body: common }, on('openai'))).toBeUndefined();
  });

  it("a model served by several vendors takes any of their names, whatever the upstreams' order", () => {
    for (const order of [on('openai', 'vertex'), on('vertex', 'openai')]) {
      expect(refusal({ model: 'm', input: 'x', autoTruncate: true }, order)).toBeUndefined();
      expect(refusal({ model: 'm', input: 'x', textTruncate: 'end' }, order)?.param).toBe('textTruncate');
    }
  });

  it('leaves a model without upstreams to the service (no vendor to judge by)', () => {
    expect(refusal({ model: 'm', input: 'x', autoTruncate: true }, [])).toBeUndefined();
  });

  it('every registered vendor declares its names, none of them a common one', () => {
    for (const m of embeddingModules) {
      expect(m.vendor.ownedParams, m.id).toBeInstanceOf(Set);
      for (const name of m.vendor.ownedParams) expect(COMMON_EMBEDDING_PARAMS.has(name), `${m.id}: ${name}`).toBe(false);
    }
  });
});
