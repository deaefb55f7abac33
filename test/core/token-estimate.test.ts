import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { estimateTextTokens } from '../../src/core/token-count.js';
import { estimateAll, needsExactCount } from '../../src/embeddings/tokens.js';

const PLAIN = { disallowedSpecial: new Set<string>() };
const exact = (t: string) => cl100k(t, PLAIN);
const read = (p: string) => readFileSync(new URL(`../../${p}`, import.meta.url), 'utf8');

describe('the tokenizer-free estimate', () => {
  it('stays close to cl100k on prose, code, numbers and non-Latin text', () => {
    const samples: Array<[string, number]> = [
      ['one two three', 0],
      ['The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', 0.1],
      [Array.from({ length: 600 }, (_, i) => `w${i}`).join(' '), 0.05],
      [read('README.md').slice(0, 20_000), 0.15],
      [read('src/app.ts'), 0.2],
      ['lorem ipsum dolor sit amet '.repeat(40), 0.05],
      ['Die Bundesregierung hat am Mittwoch beschlossen, die Förderung für erneuerbare Energien auszuweiten.', 0.3],
      ['Правительство объявило о новых мерах поддержки малого бизнеса в следующем году.', 0.3],
      ['今天天气很好，我们去公园散步吧。人工智能正在改变世界。', 0.3],
      ['3.14159 2718281828 1,000,000 42', 0.3],
    ];
    for (const [text, tolerance] of samples) {
      const want = exact(text);
      const got = estimateTextTokens(text);
      expect(Math.abs(got - want) / want, `${text.slice(0, 40)}: estimate ${got}, cl100k ${want}`).toBeLessThanOrEqual(tolerance);
    }
    expect(estimateTextTokens('')).toBe(0);
  });

  it('does not take a long run of mixed whitespace for one token', () => {
    // BPE makes each ' \n' pair a token of its own: 2,000 here. One token per run let a request pass
    // admission, the key budget and the balance check as almost nothing.
    for (const text of [' \n'.repeat(4_000), '\t\n'.repeat(1_000), 'hello' + ' \n'.repeat(4_000) + 'world']) {
      const want = exact(text);
      const got = estimateTextTokens(text);
      expect(got, `${JSON.stringify(text.slice(0, 6))}: estimate ${got}, cl100k ${want}`).toBeGreaterThanOrEqual(want / 2);
    }
    // A paragraph break and an indent are still one token each.
    expect(estimateTextTokens('one\n\ntwo')).toBe(estimateTextTokens('one two') + 1);
    expect(estimateTextTokens('if x:\n        y')).toBe(estimateTextTokens('if x: y') + 1);
  });

  it('gives one figure per input: text estimated, token lists by length, media as one unit', () => {
    expect(estimateAll(['one two three', [1, 2, 3, 4], ''])).toEqual([3, 4, 0]);
    expect(estimateAll(['aGVsbG8gd29ybGQ=', 'https://example.com/cat.png'], 'image')).toEqual([1, 1]);
  });

  it('asks for an exact count only when the texts could reach a per-call token cap', () => {
    expect(needsExactCount(['short text'], 300_000)).toBe(false);
    expect(needsExactCount(['short text'], undefined)).toBe(false);
    // 10 bytes each: 30 bytes cannot hold more than 30 tokens.
    expect(needsExactCount(['0123456789', '0123456789', '0123456789'], 30)).toBe(false);
    expect(needsExactCount(['0123456789', '0123456789', '0123456789', 'x'], 30)).toBe(true);
    // UTF-8 size, not UTF-16 length: 12 characters of 3 bytes each.
    expect(needsExactCount(['今天天气很好今天天气很好'], 30)).toBe(true);
  });

  it('estimates without loading a tokenizer table', () => {
    const cache = createRequire(import.meta.url).cache;
    const loaded = () => Object.keys(cache).some((k) => k.includes('gpt-tokenizer') && k.includes('cl100k'));
    const before = loaded();
    estimateAll(['The quick brown fox jumps over the lazy dog.'.repeat(100)]);
    expect(loaded()).toBe(before);
    expect(before).toBe(false);
  });
});
