import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_UPSTREAM_JSON_DEPTH } from '../../src/http/upstream-answer.js';
import { MODELS, startFakeVendors, type FakeVendors } from './fake-vendors.js';
import { post, startHarness, type Harness } from './harness.js';

/**
 * An embeddings upstream's answer nested deeper than any vendor object is never handed to
 * `JSON.parse`: parsing a hostile nesting holds the event loop for seconds (answers read whole may
 * be 64 MB), and any later walk of it recurses. The same bound holds for every answer read whole.
 */
const MODEL = MODELS.openai;
let answer: { status: number; body: string } = { status: 200, body: '{}' };
let fake: FakeVendors;
let h: Harness;

beforeAll(async () => {
  fake = await startFakeVendors();
  fake.answer = ({ res }) => void res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  h = await startHarness(fake.specs().filter((s) => s.models?.includes(MODEL)), { prices: { [MODEL]: 1 } });
});
afterAll(async () => {
  await h.close();
  await fake.close();
});
afterEach(() => vi.restoreAllMocks());

const nested = (depth: number) => `{"error":{"message":"no"},"x":${'['.repeat(depth)}${']'.repeat(depth)}}`;

/** Runs `fn` and counts the texts of exactly `length` characters JSON.parse was given (the client's own parse of the answer is longer or shorter). */
async function parsedLengths(length: number, fn: () => Promise<void>): Promise<number[]> {
  const seen: number[] = [];
  const real = JSON.parse;
  vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: (k: string, v: unknown) => unknown) => {
    if (typeof text === 'string' && text.length === length) seen.push(text.length);
    return real(text, reviver);
  });
  await fn();
  return seen;
}

describe('embeddings upstream answers nested deeper than any vendor object', () => {
  for (const status of [200, 400, 500]) {
    it(`are not parsed (status ${status}), and the client gets an error without a charge`, async () => {
      const { key, accountId } = await h.newKey(100);
      const before = await h.balance(accountId);
      const body = nested(MAX_UPSTREAM_JSON_DEPTH + 1);
      answer = { status, body };
      const lengths = await parsedLengths(body.length, async () => {
        const res = await post(h, key, { model: MODEL, input: 'hello' });
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.json?.error?.type).toBeTypeOf('string');
      });
      expect(lengths).toEqual([]);
      expect(await h.balance(accountId)).toBe(before);
    });
  }

  it('are parsed when they nest as deep as allowed (the bound is not lower than it says)', async () => {
    const { key } = await h.newKey(100);
    const body = nested(MAX_UPSTREAM_JSON_DEPTH - 1);
    answer = { status: 400, body };
    const lengths = await parsedLengths(body.length, async () => {
      await post(h, key, { model: MODEL, input: 'hello' });
    });
    expect(lengths).toContain(body.length);
  });
});
