import { describe, expect, it } from 'vitest';
import { sampleMp4 } from '../../src/sim/media.js';
import { inlineVideo, strictBase64 } from '../../src/video/inline-output.js';

/** What counts as an inline video's base64 (the gateway-level behaviour is in inline-not-video.test.ts). */
describe('strictBase64', () => {
  it('decodes standard and URL-safe base64, padded or not', () => {
    for (const [text, bytes] of [
      ['', ''],
      ['AA==', '00'],
      ['AA', '00'],
      ['AAA=', '0000'],
      ['AAA', '0000'],
      ['+/+/', 'fbffbf'],
      ['-_-_', 'fbffbf'],
    ] as const) {
      expect(strictBase64(text)?.toString('hex'), text).toBe(bytes);
    }
  });

  it('refuses anything Node would decode by skipping or stopping', () => {
    for (const text of ['!!!!****', 'AA AA', 'AA\nAA', 'AAAA=AAA', '+/-_', 'A', 'AAAAA', 'AA=', 'AAA==', 'A===', '====', 'AA%3D']) {
      expect(strictBase64(text), JSON.stringify(text)).toBeUndefined();
    }
    // A long text (checked by its decoded length, not a pattern) with one character out of place.
    const long = Buffer.alloc(3 * 100_000, 0xfb).toString('base64');
    expect(strictBase64(long)?.length).toBe(300_000);
    for (const bad of ['!', ' ', '=', '\n', '\u00e9', '-']) {
      const text = `${long.slice(0, 200_000)}${bad}${long.slice(200_001)}`;
      expect(strictBase64(text), JSON.stringify(bad)).toBeUndefined();
    }
  });
});

describe('inlineVideo', () => {
  const mp4 = sampleMp4().toString('base64');
  // A small answer's base64 comes as a string, a large one's as its characters in bytes: one verdict.
  const forms = (text: string): (string | Buffer)[] => [text, Buffer.from(text, 'latin1')];
  it('takes a video container, and says why anything else is not one', async () => {
    const afterFree = (bytes: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 8]), Buffer.from('free'), bytes]).toString('base64');
    for (const [text, mimeType, verdict] of [
      [mp4, 'video/mp4', { bytes: sampleMp4() }],
      [mp4, undefined, { bytes: sampleMp4() }],
      [mp4, 'text/html; charset=utf-8', { problem: 'declared a document type' }],
      [mp4, 'application/json', { problem: 'declared a document type' }],
      ['', 'video/mp4', { problem: 'empty' }],
      ['!!!!', 'video/mp4', { problem: 'not valid base64' }],
      [`${mp4.slice(0, 40)}*${mp4.slice(40)}`, 'video/mp4', { problem: 'not valid base64' }],
      [Buffer.from('<html>').toString('base64'), undefined, { problem: 'first bytes are not a video container' }],
      [afterFree(Buffer.from('<html><body>x</body></html>')), undefined, { problem: 'first bytes are not a video container' }],
    ] as const) {
      for (const inlineBase64 of forms(text)) {
        expect(await inlineVideo({ inlineBase64, ...(mimeType ? { mimeType } : {}) }), `${text.slice(0, 20)} ${typeof inlineBase64}`).toEqual(verdict);
      }
    }
    for (const inlineBase64 of forms(afterFree(sampleMp4()))) expect(await inlineVideo({ inlineBase64 })).toHaveProperty('bytes');
  });
});
