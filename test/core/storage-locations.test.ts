import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { isLocationOf, refusedLocation } from '../../src/core/storage-locations.js';
import type { EmbeddingRequest } from '../../src/embeddings/types.js';
import { bedrockVendor } from '../../src/embeddings/vendors/bedrock/adapter.js';
import { vertexVendor } from '../../src/embeddings/vendors/vertex/adapter.js';
import type { Upstream } from '../../src/http/types.js';

/** The object-store walk shared by Vertex (gs://) and Bedrock (s3://), on its own and through both adapters. */
describe('refusedLocation', () => {
  it('finds a location of the scheme at any depth, in any letter case and after blanks, and nothing else', () => {
    expect(refusedLocation({ a: [{ b: { c: 'gs://bucket/x.png' } }] }, 'gs')).toBe('gs://bucket/x.png');
    expect(refusedLocation(['x', ' \tGS://b/o'], 'gs')).toBe(' \tGS://b/o');
    expect(refusedLocation({ uri: 's3://b/o' }, 'gs')).toBeUndefined();
    expect(refusedLocation({ uri: 'https://gs://b', n: 1, t: true, z: null }, 'gs')).toBeUndefined();
    expect(isLocationOf('s3', '\u00a0s3://b')).toBe(true);
    expect(isLocationOf('s3', 's3:/b')).toBe(false);
  });

  it('lets through what the caller allows (seen trimmed) and names the first location it does not', () => {
    const allowed = (uri: string) => uri.startsWith('s3://ok/');
    expect(refusedLocation({ a: ' s3://ok/1.png ', b: ['s3://ok/2.png'] }, 's3', allowed)).toBeUndefined();
    expect(refusedLocation({ a: 's3://ok/1.png', b: ['s3://no/2.png', 's3://no/3.png'] }, 's3', allowed)).toBe('s3://no/2.png');
  });

  it('stops at a depth far past any body the gateway accepts', () => {
    let deep: unknown = 'gs://b/o';
    for (let i = 0; i < 200; i++) deep = { d: deep };
    expect(refusedLocation(deep, 'gs')).toBeUndefined();
    let shallow: unknown = 'gs://b/o';
    for (let i = 0; i < 64; i++) shallow = { d: shallow };
    expect(refusedLocation(shallow, 'gs')).toBe('gs://b/o');
  });
});

const req = (over: Partial<EmbeddingRequest>): EmbeddingRequest => ({ model: 'm', inputs: ['hello'], encodingFormat: 'float', extra: {}, ...over });

function refusal(fn: () => void): GatewayError | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    return e as GatewayError;
  }
  return undefined;
}

describe('the walk through its users', () => {
  it('Vertex refuses any gs:// location in extra_body, and nothing else', () => {
    const up: Upstream = { name: 'v', vendor: 'vertex', baseUrl: 'https://x', models: [], priority: 1, weight: 1, timeoutMs: 1000, options: {} };
    const validate = (extra: EmbeddingRequest['extra']) => () => vertexVendor.validate!(req({ model: 'text-embedding-005', extra }), 'text-embedding-005', up);
    expect(refusal(validate({ instances: [{ image: { gcsUri: ' gs://private/secret.png' } }] }))).toMatchObject({ status: 400, code: 'media_location_not_allowed', param: 'extra_body' });
    expect(refusal(validate({ autoTruncate: false, labels: { s3: 's3://b/o' } }))).toBeUndefined();
  });

  it('Bedrock refuses s3:// locations outside s3_input_prefixes, in the inputs and in extra_body', () => {
    const up: Upstream = {
      name: 'b', vendor: 'bedrock', baseUrl: 'http://127.0.0.1:9', models: [], priority: 1, weight: 1, timeoutMs: 1000,
      options: { region: 'eu-west-1', s3_input_prefixes: ['s3://bucket/'] },
    };
    const MODEL = 'us.twelvelabs.marengo-embed-2-7-v1:0';
    const validate = (over: Partial<EmbeddingRequest>) => () => bedrockVendor.validate!(req({ inputType: 'image', ...over }), MODEL, up);
    expect(refusal(validate({ inputs: ['s3://bucket/cat.png'] }))).toBeUndefined();
    expect(refusal(validate({ inputs: ['s3://bucket/cat.png', 'S3://other/x.png'] }))).toMatchObject({ code: 'media_location_not_allowed', param: 'input' });
    expect(refusal(validate({ inputs: ['s3://bucket/../other/x.png'] }))).toMatchObject({ param: 'input' });
    expect(refusal(validate({ extra: { mediaSource: { s3Location: { uri: 's3://other/secret.png' } } } }))).toMatchObject({ param: 'extra_body' });
    expect(refusal(validate({ extra: { hints: [{ uri: 's3://bucket/ok.png' }] } }))).toBeUndefined();
    // A text input is embedded as text: Bedrock reads no location from it.
    expect(refusal(validate({ inputType: 'text', inputs: ['s3://other/report.pdf'] }))).toBeUndefined();
  });
});
