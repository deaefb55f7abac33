import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeStrictBase64, isBase64Text, TURN_CHARS } from '../../src/core/base64-steps.js';
import { strictBase64 } from '../../src/video/inline-output.js';

/**
 * Base64 held as bytes and read a piece at a time (core/base64-steps.ts) gets the verdicts the
 * whole-string check gives (video/inline-output.ts strictBase64), wherever in the text the
 * character out of place stands: inside a piece, on either side of a piece's edge, in the last one.
 */
const PIECE = 64 * 1024;
const bytesOf = (text: string): Buffer => Buffer.from(text, 'latin1');

async function sameVerdict(text: string): Promise<void> {
  const whole = strictBase64(text);
  const pieces = await decodeStrictBase64(bytesOf(text));
  expect(pieces?.toString('hex'), `${text.length} chars`).toBe(whole?.toString('hex'));
}

describe('decodeStrictBase64', () => {
  it('agrees with the whole-string check on short texts', async () => {
    for (const text of ['', 'AA==', 'AA', 'AAA=', 'AAA', '+/+/', '-_-_', '!!!!****', 'AA AA', 'AAAA=AAA', '+/-_', 'A', 'AAAAA', 'AA=', 'AAA==', 'A===', '====']) {
      await sameVerdict(text);
    }
  });

  it('agrees on long texts with one character out of place anywhere, across the pieces', async () => {
    const long = randomBytes(3 * PIECE + 1_000).toString('base64');
    await sameVerdict(long);
    await sameVerdict(long.replace(/=+$/, ''));
    await sameVerdict(long.replace(/\+/g, '-').replace(/\//g, '_'));
    for (const at of [0, 1, PIECE - 1, PIECE, PIECE + 1, 2 * PIECE + 7, long.length - 3, long.length - 1]) {
      for (const bad of ['!', ' ', '=', '\n', '\u00e9', '-', '_']) await sameVerdict(`${long.slice(0, at)}${bad}${long.slice(at + 1)}`);
    }
    // One alphabet in one piece, the other in a later one.
    const standard = Buffer.alloc(3 * PIECE, 0xfb).toString('base64');
    expect(/^(\+\/v7)+$/.test(standard)).toBe(true);
    await sameVerdict(`${standard.slice(0, 2 * PIECE)}-${standard.slice(2 * PIECE + 1)}`);
  });

  it('decodes a video-sized text byte for byte, giving the loop back as it goes', async () => {
    const video = randomBytes(12 * 1024 * 1024);
    // One count per turn of the event loop: a callback that queues itself again for the next turn.
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const decoded = await decodeStrictBase64(bytesOf(video.toString('base64')));
    counting = false;
    expect(decoded?.equals(video)).toBe(true);
    // 16 MB of base64 in turns of TURN_CHARS: other callbacks ran in between.
    expect(turns).toBeGreaterThanOrEqual(Math.floor((16 * 1024 * 1024) / TURN_CHARS) - 1);
  });
});

describe('isBase64Text', () => {
  it('takes either alphabet and padding, and nothing else', async () => {
    const long = randomBytes(3 * PIECE).toString('base64');
    expect(await isBase64Text(bytesOf(long))).toBe(true);
    expect(await isBase64Text(bytesOf(`${long}==`))).toBe(true);
    expect(await isBase64Text(bytesOf(`${long.slice(0, PIECE)}=-_${long}`))).toBe(true);
    for (const at of [0, PIECE - 1, PIECE, long.length - 1]) {
      for (const bad of ['!', ' ', '"', '\\', ':', ',', '\u00e9']) {
        expect(await isBase64Text(bytesOf(`${long.slice(0, at)}${bad}${long.slice(at + 1)}`)), `${JSON.stringify(bad)} at ${at}`).toBe(false);
      }
    }
  });
});
