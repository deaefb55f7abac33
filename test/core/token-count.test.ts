import fc from 'fast-check';
import { countTokens as o200k } from 'gpt-tokenizer';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { countAll } from '../../src/embeddings/tokens.js';
import { estimatePromptTokens } from '../../src/chat/tokens.js';
import { MAX_PIECE_CHARS, MIN_TOKENS_PER_BYTE, TokenCounter, nextCut } from '../../src/core/token-count.js';

const PLAIN = { disallowedSpecial: new Set<string>() };
const encoders = { cl100k: (t: string) => cl100k(t, PLAIN), o200k: (t: string) => o200k(t, PLAIN) };

/** Words of ordinary length, joined by the separators real text has (so every pre-token is short). */
const ordinaryText = fc
  .array(
    fc.tuple(
      fc.string({ unit: fc.constantFrom(...'abcXYZ019éß的😀.,!?\'-_/'.split(/(?:)/u)), minLength: 1, maxLength: 30 }),
      fc.constantFrom(' ', '  ', '\t', '\n', ' \n ', '\r\n', ', ', '. '),
    ),
    { maxLength: 400 },
  )
  .map((parts) => parts.map(([w, s]) => w + s).join(''));

/** An encoder that records what it was given. */
function recording(encode: (t: string) => number) {
  const pieces: string[] = [];
  return { pieces, encode: (t: string) => (pieces.push(t), encode(t)) };
}

describe('bounded token counting', () => {
  it('counts ordinary text exactly, for both tokenizers, however it is cut into pieces', () => {
    fc.assert(
      fc.property(ordinaryText, (text) => {
        for (const encode of Object.values(encoders)) expect(new TokenCounter(encode).countSync(text)).toBe(encode(text));
      }),
      { numRuns: 150 },
    );
  });

  it('never hands the tokenizer more than one bounded piece, and never splits a surrogate pair', () => {
    const hostile = fc.oneof(
      fc.constantFrom('a', ' ', '!', '\n', '1', 'é', '😀', ' \n', 'ab').chain((unit) => fc.integer({ min: 1, max: 3000 }).map((n) => unit.repeat(n))),
      // Any UTF-16 code units, lone surrogates included (arrays of integers generate much faster than binary strings).
      fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 3000 }).map((units) => String.fromCharCode(...units)),
      ordinaryText,
    );
    fc.assert(
      fc.property(hostile, (text) => {
        // Only the pieces matter here, so a trivial encoder keeps the property fast.
        const r = recording((t) => t.length);
        expect(new TokenCounter(r.encode).countSync(text)).toBe(text.length);
        expect(r.pieces.join('')).toBe(text);
        r.pieces.forEach((p, i) => {
          expect(p.length).toBeLessThanOrEqual(MAX_PIECE_CHARS);
          // A high surrogate may end only the last piece (when the text itself ends with a lone one).
          if (i < r.pieces.length - 1) expect(/[\ud800-\udbff]$/.test(p)).toBe(false);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('cuts a run without split points where the limit falls, and prefers a space after a word', () => {
    const run = 'a'.repeat(1000);
    expect(nextCut(run, 0)).toBe(MAX_PIECE_CHARS);
    const text = 'word '.repeat(100);
    const cut = nextCut(text, 0);
    expect(text[cut]).toBe(' ');
    expect(text[cut - 1]).toBe('d');
    // A run of 200,000 'a's (issue 9, reproduction 3) is counted close to the tokenizer's own answer.
    const long = 'a'.repeat(200_000);
    const n = new TokenCounter(encoders.cl100k).countSync(long);
    expect(Math.abs(n - 25_000)).toBeLessThan(800);
  });

  it('feeds at most the budget to the tokenizer and estimates the rest conservatively from its size', () => {
    const r = recording(encoders.cl100k);
    const budget = 10_000;
    const text = 'plain words in a row '.repeat(2000); // 42,000 characters
    const n = new TokenCounter(r.encode, budget).countSync(text);
    const fed = r.pieces.reduce((s, p) => s + p.length, 0);
    expect(fed).toBeLessThan(budget + MAX_PIECE_CHARS);
    const exact = encoders.cl100k(text);
    expect(n).toBeGreaterThanOrEqual(exact);
    expect(n).toBeGreaterThanOrEqual(Math.ceil((text.length - fed) * MIN_TOKENS_PER_BYTE));
    expect(n).toBeLessThan(exact * 1.5);
  });

  it('lets other work run while a large input is counted', async () => {
    let ranBetween = false;
    let calls = 0;
    const slow = (t: string) => {
      calls++;
      const until = performance.now() + 1; // a tokenizer taking 1 ms per piece
      while (performance.now() < until);
      return t.length;
    };
    setImmediate(() => (ranBetween = calls > 0));
    const n = await new TokenCounter(slow).count('x '.repeat(10_000));
    expect(n).toBe(20_000);
    expect(calls).toBeGreaterThan(50);
    expect(ranBetween).toBe(true);
  });

  it('shares one budget across the inputs and messages of a request', async () => {
    const inputs = Array.from({ length: 40 }, () => 'lorem ipsum dolor sit amet '.repeat(400)); // 432,000 characters
    const counts = await countAll(inputs);
    expect(counts).toHaveLength(40);
    // The first inputs are exact; once the budget is spent the rest are estimates from their size.
    expect(counts[0]).toBe(encoders.cl100k(inputs[0]!));
    expect(counts[39]).toBeGreaterThanOrEqual(Math.ceil(inputs[39]!.length * MIN_TOKENS_PER_BYTE));
    const chat = await estimatePromptTokens({ messages: [{ role: 'user', content: 'a'.repeat(100_000) }] });
    expect(chat).toBeGreaterThan(10_000);
  });
});
