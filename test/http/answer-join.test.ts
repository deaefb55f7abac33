import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readAnswer } from '../../src/http/answer-budget.js';
import { BodyBudget } from '../../src/http/body-budget.js';

/**
 * A long answer read whole (http/answer-budget.ts) is copied into one buffer as its chunks arrive
 * when its length is declared, and joined a few MB per turn once read when it is not: either way the
 * bytes are the answer's, and what it took from the memory budget goes back.
 */
const chunksOf = (bytes: Buffer, size = 64 * 1024): Buffer[] => {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(Buffer.from(bytes.subarray(at, at + size)));
  return out;
};

async function read(bytes: Buffer, declared: string | undefined, budget = new BodyBudget(1 << 30)): Promise<Buffer> {
  return readAnswer(Readable.from(chunksOf(bytes)), declared, { budget, maxBytes: 1 << 30 }, Number.POSITIVE_INFINITY, undefined);
}

describe('a long answer read whole', () => {
  const answer = randomBytes(9 * 1024 * 1024 + 17);

  it('with a declared length: the same bytes, the budget given back', async () => {
    const budget = new BodyBudget(1 << 30);
    expect((await read(answer, String(answer.length), budget)).equals(answer)).toBe(true);
    expect(budget.inUse).toBe(0);
  });

  it('of unknown length (chunked): the same bytes, the budget given back', async () => {
    const budget = new BodyBudget(1 << 30);
    expect((await read(answer, undefined, budget)).equals(answer)).toBe(true);
    expect(budget.inUse).toBe(0);
  });

  it('longer or shorter than declared: the bytes that came', async () => {
    expect((await read(answer, String(answer.length - 1_000_000))).equals(answer)).toBe(true);
    expect((await read(answer, String(answer.length + 1_000_000))).equals(answer)).toBe(true);
  });

  it('short: as it came', async () => {
    const small = randomBytes(100_000);
    expect((await read(small, String(small.length))).equals(small)).toBe(true);
    expect((await read(small, undefined)).equals(small)).toBe(true);
  });
});
