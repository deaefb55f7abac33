import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../src/http/types.js';
import type { EmbeddingRequest } from '../../../src/embeddings/types.js';
import { bedrockVendor } from '../../../src/embeddings/vendors/bedrock/adapter.js';
import { verifySignature } from '../../../src/protocols/aws/sigv4.js';

const up: Upstream = {
  name: 'b', vendor: 'bedrock', baseUrl: 'http://127.0.0.1:9', models: [], priority: 1, weight: 1, timeoutMs: 1000,
  options: { region: 'eu-west-1', access_key_id: 'AKID', secret_access_key: 'SECRET' },
};
const req = (over: Partial<EmbeddingRequest> = {}): EmbeddingRequest => ({ model: 'm', inputs: ['hello'], encodingFormat: 'float', extra: {}, ...over });
const batch = (input: string) => ({ offset: 0, inputs: [input], tokens: [1] });
const MODEL = 'us.twelvelabs.marengo-embed-2-7-v1:0';

async function signed(body: string) {
  const built = bedrockVendor.build(batch('hello'), { req: req(), up, upstreamModel: MODEL });
  const r = await bedrockVendor.sign!({ ...built.request, body }, up);
  const u = new URL(r.url);
  const headers: Record<string, string> = { ...r.headers, host: u.host };
  return { method: 'POST', path: u.pathname, query: u.searchParams, headers, body: Buffer.from(body) };
}

describe('bedrock adapter', () => {
  it('sends a Marengo 2.7 base id as the inference profile of the upstream geography', () => {
    const url = (region: string, model: string) =>
      bedrockVendor.build(batch('hello'), { req: req(), up: { ...up, options: { ...up.options, region } }, upstreamModel: model }).request.url;
    const base = 'twelvelabs.marengo-embed-2-7-v1:0';
    expect(url('eu-west-1', base)).toBe('http://127.0.0.1:9/model/eu.twelvelabs.marengo-embed-2-7-v1%3A0/invoke');
    expect(url('us-east-1', base)).toBe('http://127.0.0.1:9/model/us.twelvelabs.marengo-embed-2-7-v1%3A0/invoke');
    expect(url('ap-northeast-2', base)).toBe('http://127.0.0.1:9/model/apac.twelvelabs.marengo-embed-2-7-v1%3A0/invoke');
    // A profile id passes unchanged; Marengo 3.0 keeps its base id where Bedrock serves it on demand.
    expect(url('eu-west-1', MODEL)).toBe('http://127.0.0.1:9/model/us.twelvelabs.marengo-embed-2-7-v1%3A0/invoke');
    expect(url('us-east-1', 'twelvelabs.marengo-embed-3-0-v1:0')).toBe('http://127.0.0.1:9/model/twelvelabs.marengo-embed-3-0-v1%3A0/invoke');
    expect(url('eu-west-1', 'twelvelabs.marengo-embed-3-0-v1:0')).toBe('http://127.0.0.1:9/model/eu.twelvelabs.marengo-embed-3-0-v1%3A0/invoke');
    expect(url('sa-east-1', base)).toBe('http://127.0.0.1:9/model/twelvelabs.marengo-embed-2-7-v1%3A0/invoke');
  });

  it('builds InvokeModel bodies for Marengo 2.7 and 3.0', () => {
    const b = bedrockVendor.build(batch('hello'), { req: req({ extra: { textTruncate: 'none' } }), up, upstreamModel: MODEL });
    expect(b.request.url).toBe('http://127.0.0.1:9/model/us.twelvelabs.marengo-embed-2-7-v1%3A0/invoke');
    expect(JSON.parse(String(b.request.body))).toEqual({ inputType: 'text', inputText: 'hello', textTruncate: 'none' });
    const v3 = bedrockVendor.build(batch('aGk='), { req: req({ inputType: 'image' }), up, upstreamModel: 'twelvelabs.marengo-embed-3-0-v1:0' });
    expect(JSON.parse(String(v3.request.body))).toEqual({ inputType: 'image', image: { mediaSource: { base64String: 'aGk=' } } });
  });

  it('signs so that the server-side check passes, and fails for a changed body or another secret', async () => {
    const r = await signed('{"inputType":"text","inputText":"hello"}');
    expect(r.headers['authorization']).toMatch(/Credential=AKID\/\d{8}\/eu-west-1\/bedrock\/aws4_request/);
    const scope = { region: 'eu-west-1', service: 'bedrock' };
    expect(await verifySignature(r, () => 'SECRET', scope)).toBeUndefined();
    expect(await verifySignature({ ...r, body: Buffer.from('{"inputType":"text","inputText":"HELLO"}') }, () => 'SECRET', scope)).toBeDefined();
    expect(await verifySignature(r, () => 'OTHER', scope)).toBe('signature mismatch');
    expect(await verifySignature(r, () => 'SECRET', { region: 'us-east-1', service: 'bedrock' })).toMatch(/scope/);
    expect(await verifySignature(r, () => 'SECRET', { ...scope, now: Date.now() + 3_600_000 })).toBe('signature expired');
  });

  it('refuses video, audio and token arrays up front', () => {
    for (const inputType of ['video', 'audio'] as const)
      expect(() => bedrockVendor.validate!(req({ inputType }), MODEL, up)).toThrow(/StartAsyncInvoke/);
    expect(() => bedrockVendor.validate!(req({ inputs: [[1, 2]] }), MODEL, up)).toThrow();
    expect(() => bedrockVendor.validate!(req({ inputType: 'image' }), MODEL, up)).not.toThrow();
  });

  it('reads the embedding and the token-count header', () => {
    const out = bedrockVendor.parse(
      { status: 200, headers: { 'x-amzn-bedrock-input-token-count': '5' }, json: { data: [{ embedding: [0.1, 0.2] }] }, text: '' },
      batch('x'),
      { req: req(), up, upstreamModel: MODEL },
    );
    expect(out).toEqual({ vectors: [[0.1, 0.2]], promptTokens: 5 });
  });

  it('classifies Bedrock errors by x-amzn-errortype', () => {
    const e = (status: number, type: string) =>
      bedrockVendor.classifyError({ status, headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` }, json: { message: 'm' }, text: '' }).kind;
    expect(e(400, 'ValidationException')).toBe('client');
    expect(e(403, 'AccessDeniedException')).toBe('auth');
    expect(e(403, 'InvalidSignatureException')).toBe('auth');
    expect(e(429, 'ThrottlingException')).toBe('retryable');
    expect(e(424, 'ModelErrorException')).toBe('retryable');
    expect(e(500, 'InternalServerException')).toBe('retryable');
  });
});
