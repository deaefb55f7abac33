import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_VECTOR_DIMENSIONS } from '../../src/embeddings/answer-bounds.js';
import { base64Floats, MODELS, sendJson, startFakeVendors, vendorAnswer, type FakeVendors, type FakeVendor } from './fake-vendors.js';
import { post, startHarness, type Harness } from './harness.js';

/**
 * An upstream vector the gateway could only pass on as something else is a malformed answer: JSON
 * reads `1e999` as Infinity, which a float answer would carry as `null` and a base64 one as Infinity;
 * a base64 vector can hold NaN; a value beyond float32 becomes Infinity once packed. Such an answer
 * (or a vector longer than any model makes) fails that upstream: no 200, nothing charged.
 */
let fake: FakeVendors;
let h: Harness;

beforeAll(async () => {
  fake = await startFakeVendors();
  // max_batch 1: two inputs take two calls, so the OpenAI answers are parsed in full (no pass-through).
  h = await startHarness(fake.specs({ openaiOptions: { max_batch: 1 } }), {
    prices: { [MODELS.vertex]: 1, [MODELS.bedrock]: 1, [MODELS.openai]: 1 },
  });
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});

/** Answers every call with `vector` (JSON text) for each of its inputs. */
function answerWith(vector: string): void {
  fake.answer = ({ vendor, inputs, res }) => sendJson(res, vendorAnswer(vendor, Array.from({ length: inputs }, () => vector)));
}

/** Posts and returns the status and what the account was charged. */
async function attempt(body: Record<string, unknown>): Promise<{ status: number; charged: number; json: any }> {
  const { key, accountId } = await h.newKey(100);
  const before = await h.balance(accountId);
  const res = await post(h, key, body);
  return { status: res.status, charged: before - (await h.balance(accountId)), json: res.json };
}

const HOSTILE = ['[1e999,-1e999,0.5,0.5]', '[0.5,0.5,-1e999,0.5]', '[0.5,1e39,0.5,0.5]', '[0.5,"0.5",0.5,0.5]'];

describe('embeddings vectors holding values that are not finite float32 numbers', () => {
  for (const vendor of ['vertex', 'bedrock'] as FakeVendor[])
    for (const encoding_format of ['float', 'base64'] as const)
      it(`${vendor}, ${encoding_format} client: no 200 and no charge`, async () => {
        answerWith('[0.5,0.25,0.125,1]');
        const sound = await attempt({ model: MODELS[vendor], input: 'hello', encoding_format });
        expect(sound.status).toBe(200);
        expect(sound.charged).toBeGreaterThan(0);
        for (const vector of HOSTILE) {
          answerWith(vector);
          const r = await attempt({ model: MODELS[vendor], input: 'hello', encoding_format });
          expect(r.status, `${vector}: ${JSON.stringify(r.json)}`).toBe(502);
          expect(r.json.error.type).toBe('server_error');
          expect(r.charged, vector).toBe(0);
        }
      });

  it('OpenAI-compatible answers parsed in full: Infinity and NaN as floats or base64, no 200 and no charge', async () => {
    const cases: [string, string, 'float' | 'base64', number][] = [
      // Two inputs over two calls: each answer parsed.
      ['floats with 1e999', '[1e999,0.5,0.5,0.5]', 'float', 2],
      ['floats with 1e999, base64 client', '[0.5,-1e999,0.5,0.5]', 'base64', 2],
      ['base64 holding Infinity', JSON.stringify(base64Floats([Infinity, 0.5, 0.5, 0.5])), 'base64', 2],
      ['base64 holding NaN', JSON.stringify(base64Floats([0.5, NaN, 0.5, 0.5])), 'base64', 2],
      // One input, but base64 for a float client: the pass-through declines it and the answer is parsed.
      ['base64 holding Infinity for a float client', JSON.stringify(base64Floats([0.5, 0.5, -Infinity, 0.5])), 'float', 1],
    ];
    answerWith(JSON.stringify(base64Floats([0.5, 0.25, 0.125, 1])));
    expect((await attempt({ model: MODELS.openai, input: ['a', 'b'], encoding_format: 'base64' })).status).toBe(200);
    for (const [what, vector, encoding_format, n] of cases) {
      answerWith(vector);
      const r = await attempt({ model: MODELS.openai, input: n === 1 ? 'a' : ['a', 'b'], encoding_format });
      expect(r.status, what).toBe(502);
      expect(r.charged, what).toBe(0);
    }
  });

  it(`a vector of more than ${MAX_VECTOR_DIMENSIONS} values is refused, one of exactly that many served`, async () => {
    const vector = (n: number) => `[${new Array(n).fill('0.5').join(',')}]`;
    answerWith(vector(MAX_VECTOR_DIMENSIONS));
    const ok = await attempt({ model: MODELS.vertex, input: 'hello' });
    expect(ok.status).toBe(200);
    expect(ok.json.data[0].embedding).toHaveLength(MAX_VECTOR_DIMENSIONS);
    for (const vendor of ['vertex', 'bedrock', 'openai'] as FakeVendor[]) {
      answerWith(vector(MAX_VECTOR_DIMENSIONS + 1));
      const r = await attempt({ model: MODELS[vendor], input: vendor === 'openai' ? ['a', 'b'] : 'hello' });
      expect(r.status, vendor).toBe(502);
      expect(r.charged, vendor).toBe(0);
    }
  });
});
