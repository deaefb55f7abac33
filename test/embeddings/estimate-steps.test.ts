import { describe, expect, it } from 'vitest';
import { estimateTextTokens } from '../../src/core/token-estimate.js';
import { ESTIMATE_STEP_CHARS, estimateAll, estimateAllBounded } from '../../src/embeddings/tokens.js';

/** Random text of the BMP's letters and symbols: the dearest text for the estimate, per character. */
function randomText(chars: number): string {
  let s = '';
  for (let i = 0; i < chars; i++) s += String.fromCharCode(0xa0 + Math.floor(Math.random() * 0x4000));
  return s;
}

describe('the embeddings estimate of a long request', () => {
  it('is made at once, with no promise, for a request of ordinary size', () => {
    const inputs = ['hello world', 'x'.repeat(ESTIMATE_STEP_CHARS - 20)];
    expect(estimateAllBounded(inputs)).toEqual(estimateAll(inputs));
  });

  it('lets the event loop turn between pieces of a 2,000,000-character input, and comes out as the whole estimate', async () => {
    const text = randomText(2_000_000);
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const result = estimateAllBounded([text]);
    expect(Array.isArray(result)).toBe(false);
    const [stepped] = await result;
    clearInterval(tick);
    // Timers ran while it was being made: the loop was not held for the whole of it.
    expect(turns).toBeGreaterThan(2);
    const whole = estimateTextTokens(text);
    // A cut may split a word (random text has no spaces here): a few tokens per cut at most.
    expect(Math.abs(stepped! - whole)).toBeLessThanOrEqual(Math.ceil(text.length / ESTIMATE_STEP_CHARS) * 4);
  });

  it('never cuts between the halves of a surrogate pair, whatever the piece boundary', async () => {
    // Pairs at every offset around the first boundary, and a high half right at it.
    const emoji = '\u{1F600}';
    const text = 'a'.repeat(ESTIMATE_STEP_CHARS - 1) + emoji.repeat(ESTIMATE_STEP_CHARS);
    const [stepped] = await estimateAllBounded([text]);
    expect(stepped).toBeLessThanOrEqual(Buffer.byteLength(text));
    expect(stepped).toBeGreaterThanOrEqual(estimateTextTokens(text) - 8);
    const tokens = await estimateAllBounded([emoji.repeat(ESTIMATE_STEP_CHARS), 'b'.repeat(10)]);
    expect(tokens[1]).toBe(estimateTextTokens('b'.repeat(10)));
  });

  it('counts token arrays and media inputs as the one-shot estimate does', async () => {
    const long = 'y'.repeat(ESTIMATE_STEP_CHARS + 1);
    expect(await estimateAllBounded([long, [1, 2, 3]])).toEqual([estimateTextTokens(long.slice(0, ESTIMATE_STEP_CHARS)) + estimateTextTokens('y'), 3]);
    expect(await estimateAllBounded([long], 'image')).toEqual([1]);
  });
});
