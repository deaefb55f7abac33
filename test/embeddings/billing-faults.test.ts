import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readUsage } from '../../src/chat/usage.js';
import { MAX_REPORTED_TOKENS } from '../../src/core/reported-usage.js';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { post, startHarness, type Harness } from './harness.js';

/**
 * What an upstream's broken answer may cost a client: nothing for an answer the gateway cannot
 * make, and never a bill from a usage figure no request could have used.
 */
const MODEL = 'text-embedding-3-small';
/** One currency unit (1,000,000 micros) per million tokens: a token costs one micro. */
const PRICE = 1;

let answer: () => unknown = () => ({});
let server: Server;
let h: Harness;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(answer()));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sim = { url, settings: {}, requests: [], close: async () => undefined } as unknown as SimServer;
  h = await startHarness([{ module: openai, sim, apiKey: 'sk-up', models: [MODEL] }], { prices: { [MODEL]: PRICE } });
});
afterAll(async () => {
  await h.close();
  await new Promise((r) => server.close(r));
});

const floats = (n: number) => Array.from({ length: n }, (_, i) => i / n);
const list = (embedding: unknown, usage: unknown) => ({ object: 'list', data: [{ object: 'embedding', index: 0, embedding }], model: MODEL, usage });

describe('embeddings billing against broken upstream answers', () => {
  it('charges nothing when the answer cannot be made from the upstream vector', async () => {
    const { key, accountId } = await h.newKey(100);
    const before = await h.balance(accountId);
    // A base64 vector of 2 bytes is not float32 data; the client asked for floats.
    answer = () => list('AAA=', { prompt_tokens: 1_000, total_tokens: 1_000 });
    const res = await post(h, key, { model: MODEL, input: 'hello', encoding_format: 'float' });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await h.balance(accountId)).toBe(before);
  });

  it('charges nothing for base64 vectors that are no float32 data, also when the client asked base64', async () => {
    const { key, accountId } = await h.newKey(100);
    const before = await h.balance(accountId);
    // 2 bytes each; without usage the answer is read in full, where the vectors are kept as they came.
    answer = () => ({ object: 'list', data: [0, 1].map((index) => ({ object: 'embedding', index, embedding: 'AAA=' })), model: MODEL });
    const res = await post(h, key, { model: MODEL, input: ['hello', 'there'], encoding_format: 'base64' });
    expect(res.status, res.text).toBe(502);
    expect(await h.balance(accountId)).toBe(before);
  });

  for (const [what, usage] of [
    ['far more tokens than any request holds', { prompt_tokens: 1e17, total_tokens: 1e17 }],
    ['one past the bound', { prompt_tokens: MAX_REPORTED_TOKENS + 1, total_tokens: MAX_REPORTED_TOKENS + 1 }],
    ['a negative count', { prompt_tokens: -5, total_tokens: -5 }],
    ['a count that is not a number', { prompt_tokens: '12', total_tokens: 12 }],
    // Within the general bound, but more than an 11-byte text can hold (a token covers a byte at least).
    ['99 million tokens for 11 bytes', { prompt_tokens: 99_000_000, total_tokens: 99_000_000 }],
    ['more tokens than bytes', { prompt_tokens: 500, total_tokens: 500 }],
    // Text is never free: zero for a text input is no count.
    ['zero tokens', { prompt_tokens: 0, total_tokens: 0 }],
  ] as const) {
    it(`bills by its own count when the usage reports ${what}`, async () => {
      const { key, accountId } = await h.newKey(100);
      const before = await h.balance(accountId);
      for (const encoding_format of ['float', 'base64'] as const) {
        answer = () => list(encoding_format === 'float' ? floats(8) : Buffer.from(new Float32Array(floats(8)).buffer).toString('base64'), usage);
        const res = await post(h, key, { model: MODEL, input: 'hello there', encoding_format });
        expect(res.status).toBe(200);
        expect(res.json.data).toHaveLength(1);
        // The usage shown is the one billed (the fast path's forwarded figure would not be).
        expect(res.json.usage.prompt_tokens).toBeGreaterThan(0);
        expect(res.json.usage.prompt_tokens).toBeLessThan(10);
      }
      // "hello there" is a couple of tokens: two requests cost a few micros, not the reported figure.
      const spent = before - (await h.balance(accountId));
      expect(spent).toBeGreaterThan(0);
      expect(spent).toBeLessThan(20);
    });
  }

  it('bills the usage as reported when it is a believable count', async () => {
    const { key, accountId } = await h.newKey(100);
    const before = await h.balance(accountId);
    answer = () => list(floats(8), { prompt_tokens: 5_000, total_tokens: 5_000 });
    // 6,000 bytes can hold 5,000 tokens (a vendor's tokenizer is not the gateway's).
    const res = await post(h, key, { model: MODEL, input: 'hello there '.repeat(500), encoding_format: 'float' });
    expect(res.status).toBe(200);
    expect(before - (await h.balance(accountId))).toBe(5_000);
  });
});

describe('chat usage from a vendor', () => {
  it('is believed only as whole, non-negative counts within the bound', () => {
    expect(readUsage({ prompt_tokens: 10, completion_tokens: 5 })).toEqual({ promptTokens: 10, completionTokens: 5, reported: true });
    expect(readUsage({ prompt_tokens: 10.2 })).toEqual({ promptTokens: 11, completionTokens: 0, reported: true });
    expect(readUsage({ prompt_tokens: 1e17, completion_tokens: 5 })).toBeUndefined();
    expect(readUsage({ prompt_tokens: 10, completion_tokens: 1e17 })).toBeUndefined();
    expect(readUsage({ prompt_tokens: 10, completion_tokens: -1 })).toBeUndefined();
    expect(readUsage({ prompt_tokens: -1 })).toBeUndefined();
  });
});
