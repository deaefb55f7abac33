import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { floatsToBase64 } from '../../src/embeddings/vectors.js';
import { MODELS, startFakeVendors, type FakeVendors } from './fake-vendors.js';
import { post, startHarness, type Harness } from './harness.js';

/**
 * An OpenAI-compatible upstream's answer is forwarded unparsed only when it vouches for itself
 * (embeddings/raw.ts). These answers look fine to a byte search but break spec 2.6: the client must
 * get either a correct answer, billed as it shows, or an error and no charge, never the bytes as sent.
 */
const MODEL = MODELS.openai;
/** One currency unit (1,000,000 micros) per million tokens: a token costs one micro. */
const PRICE = 1;

/** The upstream's next answer body, as text (some faults cannot be written by JSON.stringify). */
let answer = '{}';
let fake: FakeVendors;
let h: Harness;

beforeAll(async () => {
  fake = await startFakeVendors();
  fake.answer = ({ res }) => void res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
  h = await startHarness(fake.specs().filter((s) => s.models?.includes(MODEL)), { prices: { [MODEL]: PRICE } });
});
afterAll(async () => {
  await h.close();
  await fake.close();
});

type Item = { index?: number; embedding: unknown };
const body = (items: Item[], usage = '{"prompt_tokens":4,"total_tokens":4}') =>
  `{"object":"list","data":[${items.map((it) => JSON.stringify({ object: 'embedding', ...it })).join(',')}],"model":"${MODEL}","usage":${usage}}`;
const vector = (i: number) => [i + 0.5, -0.25, 0.125];
const inputs = (n: number) => Array.from({ length: n }, (_, i) => `input number ${i}`);

/** Posts with a fresh account; returns the answer and what the account was charged, in micros. */
async function run(request: Record<string, unknown>) {
  const { key, accountId } = await h.newKey(100);
  const before = await h.balance(accountId);
  const res = await post(h, key, { model: MODEL, ...request });
  return { res, charged: before - (await h.balance(accountId)) };
}

async function expectRefused(request: Record<string, unknown>) {
  const { res, charged } = await run(request);
  expect(res.status, res.text).toBe(502);
  expect(charged).toBe(0);
}

describe('indexes of forwarded items', () => {
  it('refuses items that all claim index 0, and charges nothing', async () => {
    for (const encoding_format of ['float', 'base64'] as const) {
      const v = (i: number) => (encoding_format === 'float' ? vector(i) : floatsToBase64(vector(i)));
      answer = body([0, 1, 2].map((i) => ({ index: 0, embedding: v(i) })));
      await expectRefused({ input: inputs(3), encoding_format });
    }
  });

  it('refuses a single vector placed at index 1, and two vectors for one input position', async () => {
    answer = body([{ index: 1, embedding: vector(0) }]);
    await expectRefused({ input: 'hello' });
    answer = body([0, 1, 1].map((index, i) => ({ index, embedding: vector(i) })));
    await expectRefused({ input: inputs(2) });
  });

  it('puts items the upstream sent out of order back in input order, billed as shown', async () => {
    answer = body([2, 0, 1].map((index) => ({ index, embedding: vector(index) })));
    const { res, charged } = await run({ input: inputs(3) });
    expect(res.status).toBe(200);
    expect(res.json.data.map((d: Item) => d.index)).toEqual([0, 1, 2]);
    expect(res.json.data.map((d: Item) => d.embedding)).toEqual([0, 1, 2].map(vector));
    expect(charged).toBe(res.json.usage.prompt_tokens * PRICE);
  });
});

describe('base64 vectors of forwarded items', () => {
  /** 21 characters: Node decodes 15 bytes, which are no whole number of float32 values. */
  const notFloats = 'zczMPc3MTD6amZk+zczMP';

  it('refuses vectors that do not decode to whole float32 values, and charges nothing', async () => {
    answer = body([{ index: 0, embedding: notFloats }]);
    await expectRefused({ input: 'hello', encoding_format: 'base64' });
    answer = body([0, 1].map((index) => ({ index, embedding: notFloats })));
    await expectRefused({ input: inputs(2), encoding_format: 'base64' });
    // Padded to whole groups of four, still 15 bytes.
    answer = body([0, 1].map((index) => ({ index, embedding: notFloats.slice(0, 20) })));
    await expectRefused({ input: inputs(2), encoding_format: 'base64' });
    // The items carry no index, so the answer is read in full: that reading refuses them too.
    answer = body([0, 1].map(() => ({ embedding: notFloats })));
    await expectRefused({ input: inputs(2), encoding_format: 'base64' });
  });

  it('refuses a vector a byte short of whole floats beside others of its length as text', async () => {
    // Both are 12 characters: 8 bytes (two floats) and 7 bytes.
    answer = body([
      { index: 0, embedding: 'AAAAAAAAgD8=' },
      { index: 1, embedding: 'AAAAAAAAgD==' },
    ]);
    await expectRefused({ input: inputs(2), encoding_format: 'base64' });
  });

  it('hands out base64 with its padding, as strict decoders want it', async () => {
    const padded = floatsToBase64([0, 1]);
    expect(padded).toBe('AAAAAAAAgD8=');
    answer = body([{ index: 0, embedding: padded.replace(/=+$/, '') }]);
    const { res, charged } = await run({ input: 'hello', encoding_format: 'base64' });
    expect(res.status).toBe(200);
    expect(res.json.data[0].embedding).toBe(padded);
    expect(charged).toBe(4 * PRICE);
  });
});

describe('usage of forwarded answers', () => {
  /** Posts and checks the usage shown is whole counts, the ones billed; returns them. */
  async function shownAndBilled(usage: string): Promise<number> {
    answer = body([{ index: 0, embedding: vector(0) }], usage);
    const { res, charged } = await run({ input: 'hello there' });
    expect(res.status).toBe(200);
    const shown = res.json.usage;
    // Whole counts as the client's parser sees them, and as they are written (`3.0` reads as 3 in
    // JavaScript but as a float in Python).
    expect(Number.isInteger(shown.prompt_tokens)).toBe(true);
    expect(res.text).toMatch(/"prompt_tokens":\d+[,}]/);
    expect(res.text).toMatch(/"total_tokens":\d+[,}]/);
    expect(shown.total_tokens).toBe(shown.prompt_tokens);
    expect(charged).toBe(shown.prompt_tokens * PRICE);
    expect(shown.cost * 1_000_000).toBeCloseTo(charged, 6);
    // The client's own parse must not see another figure under a repeated key.
    expect(res.text.match(/"prompt_tokens"/g)).toHaveLength(1);
    expect(res.text.match(/"cost"/g)).toHaveLength(1);
    return shown.prompt_tokens;
  }

  it('shows a fractional count as the whole number it bills', async () => {
    expect(await shownAndBilled('{"prompt_tokens":2.5,"total_tokens":2.5}')).toBe(3);
  });

  it('shows a count written with a fraction or exponent as a plain integer', async () => {
    for (const usage of ['{"prompt_tokens":3.0,"total_tokens":3.0}', '{"prompt_tokens":3e0,"total_tokens":3}'])
      expect(await shownAndBilled(usage)).toBe(3);
  });

  it('shows the total as the billed prompt count when the upstream reports another one, or none', async () => {
    expect(await shownAndBilled('{"prompt_tokens":5,"total_tokens":7}')).toBe(5);
    expect(await shownAndBilled('{"prompt_tokens":5}')).toBe(5);
  });

  it("shows the gateway's cost, not one the upstream put in usage", async () => {
    expect(await shownAndBilled('{"prompt_tokens":6,"total_tokens":6,"cost":99}')).toBe(6);
  });
});
