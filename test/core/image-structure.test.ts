import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { imageStructureProblem, jpegFrame } from '../../src/core/image-structure.js';

/** The container checks on the cases a truncation test over HTTP does not reach. */
const fixture = (name: string) => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url));
const png = fixture('frame.png');
const jpg = fixture('frame.jpg');
const webp = fixture('frame.webp');

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const chunk = (type: string, data: Buffer) => {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  return Buffer.concat([u32(data.length), body, u32(crc32(body))]);
};

describe('image containers', () => {
  it('takes the fixtures whole, and with bytes appended after their end', () => {
    for (const [b, kind] of [[png, 'png'], [jpg, 'jpg'], [webp, 'webp']] as const) {
      expect(imageStructureProblem(b, kind)).toBeUndefined();
      expect(imageStructureProblem(Buffer.concat([b, Buffer.alloc(7)]), kind)).toBeUndefined();
    }
  });

  it('refuses every cut of each fixture', () => {
    for (const [b, kind] of [[png, 'png'], [jpg, 'jpg'], [webp, 'webp']] as const) {
      for (let n = 0; n < b.length; n++) expect(imageStructureProblem(b.subarray(0, n), kind), `${kind} cut at ${n}`).toBeDefined();
    }
  });

  it('PNG: a damaged IHDR, a missing IDAT and a chunk claiming more than the file are refused', () => {
    const damaged = Buffer.from(png);
    damaged[20] ^= 0xff; // inside IHDR's data: its CRC no longer matches
    expect(imageStructureProblem(damaged, 'png')).toMatch(/IHDR chunk fails its CRC/);
    const ihdr = png.subarray(8, 33);
    expect(imageStructureProblem(Buffer.concat([png.subarray(0, 8), ihdr, chunk('IEND', Buffer.alloc(0))]), 'png')).toMatch(/no image data/);
    const huge = Buffer.concat([png.subarray(0, 33), u32(0x7000_0000), Buffer.from('IDAT'), Buffer.alloc(16)]);
    expect(imageStructureProblem(huge, 'png')).toMatch(/cut short .*IDAT/);
  });

  it('PNG: a file of empty chunks is refused at the chunk cap, quickly', () => {
    const filler = chunk('tEXt', Buffer.alloc(0));
    const hostile = Buffer.concat([png.subarray(0, 33), Buffer.concat(Array.from({ length: 200_000 }, () => filler))]);
    const t = performance.now();
    expect(imageStructureProblem(hostile, 'png')).toMatch(/more than 65536 chunks/);
    expect(performance.now() - t).toBeLessThan(500);
  });

  it('JPEG: the EOI of an Exif thumbnail does not make a cut main image whole', () => {
    const thumbnail = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), Buffer.from('ffd8ffd9', 'hex')]);
    const app1 = Buffer.concat([Buffer.from('ffe1', 'hex'), Buffer.from([0, thumbnail.length + 2]), thumbnail]);
    const withExif = Buffer.concat([jpg.subarray(0, 2), app1, jpg.subarray(2)]);
    expect(imageStructureProblem(withExif, 'jpg')).toBeUndefined();
    expect(imageStructureProblem(withExif.subarray(0, withExif.length - 40), 'jpg')).toMatch(/no EOI/);
  });

  it('JPEG: the EOI is looked for after the image data only, also behind runs of its own bytes', () => {
    // The last two bytes of the fixture are its EOI; the image data runs up to them.
    const body = jpg.subarray(0, jpg.length - 2);
    expect(imageStructureProblem(Buffer.concat([body, Buffer.alloc(200_000, 0xd9)]), 'jpg')).toMatch(/no EOI/);
    expect(imageStructureProblem(Buffer.concat([body, Buffer.alloc(200_000, 0xff)]), 'jpg')).toMatch(/no EOI/);
    expect(imageStructureProblem(Buffer.concat([body, Buffer.alloc(200_000, 0xd9), Buffer.from('ffd9', 'hex')]), 'jpg')).toBeUndefined();
    expect(imageStructureProblem(Buffer.concat([body, Buffer.from('ffd9', 'hex'), Buffer.alloc(200_000, 0xd9)]), 'jpg')).toBeUndefined();
    // An FF D9 inside the headers, before the image data, is no EOI.
    expect(imageStructureProblem(body, 'jpg')).toMatch(/no EOI/);
  });

  it('JPEG: stray bytes before a marker are skipped as libjpeg skips them; the frame is still found', () => {
    const whole = jpegFrame(jpg)!;
    expect(whole.width).toBeGreaterThan(0);
    // After SOI and after the first header segment: where cameras and editors have left them.
    const firstEnd = 4 + jpg.readUInt16BE(4);
    for (const at of [2, firstEnd]) {
      const stray = Buffer.concat([jpg.subarray(0, at), Buffer.from([0x00, 0x12, 0x34]), jpg.subarray(at)]);
      expect(imageStructureProblem(stray, 'jpg'), `stray bytes at ${at}`).toBeUndefined();
      expect(jpegFrame(stray)).toEqual(whole);
    }
  });

  it('JPEG: a file that is stray bytes after SOI, or cut after stray bytes, is refused', () => {
    expect(imageStructureProblem(Buffer.concat([jpg.subarray(0, 2), Buffer.alloc(1_000, 0x41)]), 'jpg')).toMatch(/cut short/);
    const stray = Buffer.concat([jpg.subarray(0, 2), Buffer.from([0x00, 0x12]), jpg.subarray(2)]);
    for (let n = 2; n < stray.length; n++) expect(imageStructureProblem(stray.subarray(0, n), 'jpg'), `cut at ${n}`).toBeDefined();
  });

  it('WebP: a RIFF size past the file, or chunks without image data, are refused', () => {
    const grown = Buffer.from(webp);
    grown.writeUInt32LE(webp.readUInt32LE(4) + 2, 4);
    expect(imageStructureProblem(grown, 'webp')).toMatch(/cut short/);
    const meta = Buffer.concat([Buffer.from('EXIF', 'latin1'), Buffer.from([4, 0, 0, 0]), Buffer.alloc(4)]);
    const noImage = Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.from([4 + meta.length, 0, 0, 0]), Buffer.from('WEBP', 'latin1'), meta]);
    expect(imageStructureProblem(noImage, 'webp')).toMatch(/no image data/);
  });

  it('WebP: a last chunk of odd size without its pad byte is taken, one cut by a byte more is not', () => {
    // The fixture with an odd-sized XMP chunk last, written with and without its pad byte.
    const xmp = Buffer.from('<x/>!', 'latin1'); // 5 bytes: padded to 6 in a conforming file
    const body = webp.subarray(12);
    const build = (pad: boolean, riffPad: boolean) => {
      const last = Buffer.concat([Buffer.from('XMP ', 'latin1'), Buffer.from([xmp.length, 0, 0, 0]), xmp, pad ? Buffer.alloc(1) : Buffer.alloc(0)]);
      const riff = 4 + body.length + last.length + (riffPad && !pad ? 1 : 0);
      const head = Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.alloc(4), Buffer.from('WEBP', 'latin1')]);
      head.writeUInt32LE(riff, 4);
      return Buffer.concat([head, body, last]);
    };
    expect(imageStructureProblem(build(true, true), 'webp')).toBeUndefined();
    expect(imageStructureProblem(build(false, false), 'webp')).toBeUndefined();
    // The RIFF size counts the pad byte the file lacks: the file is a byte short of what it declares.
    expect(imageStructureProblem(build(false, true), 'webp')).toMatch(/cut short/);
    // Without the pad byte and one payload byte less than declared: damaged.
    const short = build(false, false);
    const cut = short.subarray(0, short.length - 1);
    cut.writeUInt32LE(cut.length - 8, 4);
    expect(imageStructureProblem(cut, 'webp')).toMatch(/runs past/);
  });
});
