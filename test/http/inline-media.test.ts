import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MIN_MEDIA_CHARS } from '../../src/http/inline-media.js';
import { TransportError } from '../../src/http/types.js';
import { mediaAnswer } from '../../src/http/upstream-answer.js';

/**
 * An answer that may carry media inline (http/inline-media.ts): its base64 strings are lifted out
 * before parsing, the rest is held to a small cap, and the parsed value, its media put back, is what
 * JSON.parse would have made of the whole answer. Until put back, each media string is a placeholder
 * whose characters the answer's media hands out as bytes.
 */
const CAP = 64 * 1024;
const shape = { inlineMedia: { maxRestBytes: CAP } };
const media = (bytes = 3 * MIN_MEDIA_CHARS) => randomBytes(bytes).toString('base64');

function read(text: string): ReturnType<typeof mediaAnswer> {
  return mediaAnswer(200, { 'content-type': 'application/json' }, Buffer.from(text), shape);
}

describe('an answer with media inline', () => {
  it('hands out a media string as its characters, a data: URL\'s head staying in the rest', async () => {
    const a = media();
    const b = media();
    const out = await read(JSON.stringify({ response: { videos: [{ bytesBase64Encoded: a }] }, video: { url: `data:video/mp4;base64,${b}` } }));
    const json = out.json as any;
    const placeholder = json.response.videos[0].bytesBase64Encoded as string;
    expect(out.media!.text(placeholder)?.toString('latin1')).toBe(a);
    const url = json.video.url as string;
    expect(url.startsWith('data:video/mp4;base64,')).toBe(true);
    expect(out.media!.text(url.slice('data:video/mp4;base64,'.length))?.toString('latin1')).toBe(b);
    expect(out.media!.text('media:not-one-of-them:0')).toBeUndefined();
  });

  it('parses to what the whole answer would, however it is written', async () => {
    const a = media();
    const b = `data:video/mp4;base64,${media()}`;
    const c = media().replace(/\+/g, '-').replace(/\//g, '_');
    for (const value of [
      { done: true, response: { videos: [{ bytesBase64Encoded: a, mimeType: 'video/mp4' }, { bytesBase64Encoded: c }] } },
      { video: { url: b, content_type: 'video/mp4' }, videos: [b, a], seed: 1 },
      [a, 'x', { y: [a] }],
      { ['__proto__']: a, n: null },
    ]) {
      for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
        const out = await read(text);
        // No media string was made a string: the parse holds placeholders, small ones.
        expect(JSON.stringify(out.json).length).toBeLessThan(CAP);
        expect(out.media!.restore(out.json)).toEqual(JSON.parse(text));
        // What is kept as text (for messages) is the small rest.
        expect(out.text.length).toBeLessThan(CAP);
      }
    }
    const proto = (await read(JSON.stringify({ ['__proto__']: a }))).json as Record<string, unknown>;
    expect(Object.getOwnPropertyNames(proto)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  });

  it('refuses unparsed an answer whose rest is over the cap, whatever holds it', async () => {
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`f${i}`, `v${i}-xxxxxxxxxxxxxxxx`])));
    const prose = 'words, and more words: '.repeat(MIN_MEDIA_CHARS / 8);
    for (const text of [
      `{"done":false,"metadata":${wide}}`,
      // A long string that is not base64 is no media: it stays in the rest.
      JSON.stringify({ message: prose, video: media() }),
      // A key is never media, however long.
      JSON.stringify({ [media()]: 1 }),
      // Nor base64 inside a string that holds escapes.
      JSON.stringify({ s: `say "${media()}"` }),
      // Nor anything in a body that is not JSON.
      `<html>${media()}</html>`.repeat(2),
    ]) {
      const refused = await read(text).then(() => undefined, (e: unknown) => e);
      expect(refused, text.slice(0, 40)).toBeInstanceOf(TransportError);
      expect((refused as TransportError).reason).toBe('too_large');
    }
  });

  it('reads an answer under the cap as any other, media or not', async () => {
    const small = { name: 'op', done: false, note: 'a "quoted" \\ word' };
    expect((await read(JSON.stringify(small))).json).toEqual(small);
    expect((await read('not json')).json).toBeUndefined();
  });

  it('costs a few native passes over a large answer, not a parse of it', async () => {
    const video = randomBytes(30 * 1024 * 1024).toString('base64');
    const text = Buffer.from(JSON.stringify({ response: { videos: [{ bytesBase64Encoded: video }] } }));
    const start = process.cpuUsage();
    const out = await mediaAnswer(200, {}, text, shape);
    const used = process.cpuUsage(start);
    expect(out.media!.text((out.json as any).response.videos[0].bytesBase64Encoded)?.length).toBe(video.length);
    expect((used.user + used.system) / 1000).toBeLessThan(1_000);
  });
});
