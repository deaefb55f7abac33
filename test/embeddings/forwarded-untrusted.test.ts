import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { floatsToBase64 } from '../../src/embeddings/vectors.js';
import { MODELS, startFakeVendors, type FakeVendors } from './fake-vendors.js';
import { post, startHarness, type Harness } from './harness.js';

/**
 * One OpenAI-compatible call serving the whole request may be forwarded unparsed (embeddings/raw.ts),
 * and forwarded bytes are not redacted. An upstream that puts a credential in a member's name, or
 * vectors the full parse would refuse (1e999, text that is no JSON, more values than any model makes),
 * must get the full parse's verdict: the name dropped, or 502 and no charge. A sound answer still goes
 * out as the upstream's own bytes.
 */
const MODEL = MODELS.openai;
const PRICE = 1;
const SECRET = 'sk-upstreamSECRET0123456789abcdefABCDEF';
const UPSTREAM_KEY = '0123456789abcdef0123456789abcdef';

let answer = '{}';
let fake: FakeVendors;
let h: Harness;

beforeAll(async () => {
  fake = await startFakeVendors();
  fake.answer = ({ res }) => void res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
  // An Azure-style key: 32 hex digits, which is also valid base64 (six finite float32 values).
  h = await startHarness(
    fake.specs().filter((s) => s.models?.includes(MODEL)).map((s) => ({ ...s, apiKey: UPSTREAM_KEY })),
    { prices: { [MODEL]: PRICE } },
  );
});
afterAll(async () => {
  await h.close();
  await fake.close();
});

const body = (vector: string, extra = { top: '', item: '', usage: '' }) =>
  `{"object":"list",${extra.top}"data":[{"object":"embedding","index":0,${extra.item}"embedding":${vector}}],"model":"${MODEL}","usage":{"prompt_tokens":4,${extra.usage}"total_tokens":4}}`;

async function run(request: Record<string, unknown>) {
  const { key, accountId } = await h.newKey(100);
  const before = await h.balance(accountId);
  const res = await post(h, key, { model: MODEL, input: 'hello there', ...request });
  return { res, charged: before - (await h.balance(accountId)) };
}

describe('an answer the fast path cannot vouch for', () => {
  it('a member name of the upstream\'s own is dropped by the full parse, at the top, in an item and in usage', async () => {
    for (const where of ['top', 'item', 'usage'] as const) {
      answer = body('[0.5,-0.25]', { top: '', item: '', usage: '', [where]: `"${SECRET}":${where === 'item' ? 'null' : '1'},` });
      const { res, charged } = await run({});
      expect(res.status, where).toBe(200);
      expect(res.text, where).not.toContain('upstreamSECRET');
      expect(res.json.data[0].embedding).toEqual([0.5, -0.25]);
      expect(charged).toBe(res.json.usage.prompt_tokens * PRICE);
    }
  });

  it('vectors the full parse refuses are a 502 with nothing charged, not a 200 forwarded and billed', async () => {
    const cases: [string, string, 'float' | 'base64'][] = [
      ['1e999', '[1e999,0.5]', 'float'],
      ['beyond float32', '[0.5,1e39]', 'float'],
      ['no JSON', '[1,null,true,{},-,Infinity,NaN]', 'float'],
      ['a lone minus', '[0.5,-]', 'float'],
      ['20,000 values', `[${new Array(20_000).fill('0.5').join(',')}]`, 'float'],
      ['base64 holding NaN', JSON.stringify(floatsToBase64([0.5, NaN])), 'base64'],
      ['base64 holding Infinity', JSON.stringify(floatsToBase64([Infinity, 0.5])), 'base64'],
    ];
    for (const [what, vector, encoding_format] of cases) {
      answer = body(vector);
      const { res, charged } = await run({ encoding_format });
      expect(res.status, `${what}: ${res.text.slice(0, 200)}`).toBe(502);
      expect(res.json.error.type, what).toBe('server_error');
      expect(charged, what).toBe(0);
    }
  });
});

describe("the upstream's own key as a base64 vector", () => {
  it('is a 502 with nothing charged, not handed on (base64 vectors never pass through the redaction)', async () => {
    answer = body(JSON.stringify(UPSTREAM_KEY));
    const { res, charged } = await run({ encoding_format: 'base64' });
    expect(res.status, res.text.slice(0, 200)).toBe(502);
    expect(res.text).not.toContain(UPSTREAM_KEY);
    expect(charged).toBe(0);
    // The same vector under another value is a sound answer.
    answer = body(JSON.stringify(`${UPSTREAM_KEY.slice(0, -4)}0000`));
    expect((await run({ encoding_format: 'base64' })).res.status).toBe(200);
  });
});

describe('a fractional token count', () => {
  it('is billed rounded up, as chat rounds it', async () => {
    for (const [reported, billed] of [[2.4, 3], [0.5, 1], [3, 3]] as const) {
      answer = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"${MODEL}","usage":{"prompt_tokens":${reported},"total_tokens":${reported}}}`;
      const { res, charged } = await run({});
      expect(res.status).toBe(200);
      expect(res.json.usage.prompt_tokens, String(reported)).toBe(billed);
      expect(charged, String(reported)).toBe(billed * PRICE);
    }
  });
});

describe('an answer the fast path vouches for', () => {
  /** The answer as sent, but for the gateway's `cost`, which goes first in `usage`. */
  const withoutCost = (text: string) => text.replace(/"usage":\{"cost":[0-9.e-]+,/, '"usage":{');

  it('goes out as the upstream wrote it, floats in any JSON form and base64', async () => {
    const cases: [string, 'float' | 'base64'][] = [
      ['[0.5,-0.25]', 'float'],
      ['[ -0.012345678 , 1e-7 , 2.5E+3 , 0 ,\n 9.99e37 ]', 'float'],
      [`[${Array.from({ length: 1536 }, (_, i) => ((i % 7) - 3) * 0.0123456789).join(',')}]`, 'float'],
      [JSON.stringify(floatsToBase64([0.5, -0.25, 3])), 'base64'],
    ];
    for (const [vector, encoding_format] of cases) {
      answer = body(vector, { top: '"created":1700000000,', item: '', usage: '' });
      const { res, charged } = await run({ encoding_format });
      expect(res.status).toBe(200);
      expect(withoutCost(res.text)).toBe(answer);
      expect(charged).toBe(4 * PRICE);
    }
  });
});
