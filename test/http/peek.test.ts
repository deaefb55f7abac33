import { PassThrough, Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { imageTypeOf, startsLikeVideo } from '../../src/core/sniff.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { peek } from '../../src/http/streams.js';
import { isDocumentType } from '../../src/video/media-check.js';
import { fragmentedMp4 } from '../helpers/mp4-boxes.js';

describe('peek', () => {
  it('reads the first bytes across chunks and hands back the same stream with every byte', async () => {
    const source = new PassThrough();
    const seen = peek(source, 6);
    source.write('ab');
    source.write('cd');
    source.write('efgh');
    const { head, body, ended } = await seen;
    expect(head.toString()).toBe('abcdef');
    expect(ended).toBe(false);
    expect(body).toBe(source);
    source.end('ij');
    expect(await text(body)).toBe('abcdefghij');
  });

  it('a body shorter than asked: all of it, in a stream of its own', async () => {
    const { head, body, ended } = await peek(Readable.from([Buffer.from('abc')]), 12);
    expect(head.toString()).toBe('abc');
    expect(ended).toBe(true);
    expect(await text(body)).toBe('abc');
  });

  it('an empty body', async () => {
    const { head, body, ended } = await peek(Readable.from([]), 12);
    expect(head.length).toBe(0);
    expect(ended).toBe(true);
    expect(await text(body)).toBe('');
  });

  it('a body that fails, or is destroyed, before its first bytes: the error, and the body destroyed', async () => {
    const failing = new PassThrough();
    const seen = peek(failing, 12);
    failing.write('ab');
    failing.destroy(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
    await expect(seen).rejects.toThrow('reset');

    const closed = new PassThrough();
    const early = peek(closed, 12);
    closed.destroy();
    await expect(early).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });

    const gone = new PassThrough();
    gone.destroy();
    await expect(peek(gone, 12)).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
  });
});

describe('media signatures', () => {
  const box = (size: number, type: string) => Buffer.concat([Buffer.from([size >>> 24, (size >>> 16) & 255, (size >>> 8) & 255, size & 255]), Buffer.from(`${type}mp42`)]);

  it('video: ISO-BMFF first boxes and EBML; not text, JSON or an image', () => {
    expect(startsLikeVideo(sampleMp4())).toBe(true);
    for (const t of ['ftyp', 'styp']) expect(startsLikeVideo(box(32, t)), t).toBe(true);
    expect(startsLikeVideo(box(4, 'ftyp'))).toBe(false);
    expect(startsLikeVideo(Buffer.from('1a45dfa39f4286810142f7810142f2', 'hex'))).toBe(true);
    for (const s of ['<html><body>', '{"error":{"m', '<?xml version', 'sk-upstreamSECRET']) expect(startsLikeVideo(Buffer.from(s)), s).toBe(false);
    expect(startsLikeVideo(samplePng())).toBe(false);
    expect(startsLikeVideo(Buffer.alloc(0))).toBe(false);
    expect(startsLikeVideo(sampleMp4().subarray(0, 6))).toBe(false);
  });

  it('video: an ftyp or styp box is a whole FileTypeBox (16 bytes or more, a multiple of 4, a printable brand)', () => {
    const brandBox = (size: number, type: string, brand: Buffer | string, rest = 'html><body>') =>
      Buffer.concat([Buffer.from([size >>> 24, (size >>> 16) & 255, (size >>> 8) & 255, size & 255]), Buffer.from(type), Buffer.from(brand), Buffer.from(rest)]);
    for (const t of ['ftyp', 'styp']) {
      // Too small for a brand and a minor version: the "brand" is the page that follows.
      for (const size of [0, 1, 8, 12]) expect(startsLikeVideo(brandBox(size, t, '<htm')), `${t} ${size}`).toBe(false);
      expect(startsLikeVideo(brandBox(18, t, 'isom')), `${t} 18`).toBe(false);
      expect(startsLikeVideo(brandBox(24, t, Buffer.from([0, 0, 0, 0]))), `${t} NUL brand`).toBe(false);
      expect(startsLikeVideo(brandBox(24, t, Buffer.from([0x69, 0x73, 0x6f, 0xff]))), `${t} 8-bit brand`).toBe(false);
      for (const brand of ['isom', 'mp42', 'qt  ', 'M4V ', '3gp5', 'msdh']) expect(startsLikeVideo(brandBox(16, t, brand)), `${t} ${brand}`).toBe(true);
    }
    // What the simulators and players send: the sample MP4, a QuickTime file, a fragmented MP4, a WebM file.
    expect(startsLikeVideo(sampleMp4().subarray(0, 12))).toBe(true);
    expect(startsLikeVideo(Buffer.from('0000001466747970717420200000020071742020', 'hex').subarray(0, 12))).toBe(true);
    expect(startsLikeVideo(fragmentedMp4(1000, 1).subarray(0, 12))).toBe(true);
    expect(startsLikeVideo(Buffer.from('1a45dfa39f4286810142f7810142f2', 'hex').subarray(0, 12))).toBe(true);
    // A range shorter than the brand is checked on the size and type it has.
    expect(startsLikeVideo(sampleMp4().subarray(0, 8), true)).toBe(true);
    expect(startsLikeVideo(brandBox(8, 'ftyp', '').subarray(0, 8), true)).toBe(false);
  });

  it('video: leading free, skip and wide boxes are stepped over, and the box after them must start a video', () => {
    const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
    const filler = (t: string, size = 8) => Buffer.concat([u32(size), Buffer.from(t), Buffer.alloc(size - 8)]);
    const page = Buffer.from('<html><body>denied: Bearer sk-upstreamSECRET</body></html>');
    for (const t of ['free', 'skip', 'wide']) {
      // An empty filler says nothing of what follows it.
      expect(startsLikeVideo(Buffer.concat([filler(t), page])), `${t} + page`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([filler(t, 16), page])), `${t} 16 + page`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([filler(t), Buffer.from('{"error":{"message":"x"}}')])), `${t} + JSON`).toBe(false);
      // Past it, the rules of an opening box: a whole FileTypeBox, or a movie box holding a movie.
      expect(startsLikeVideo(Buffer.concat([filler(t), sampleMp4()])), `${t} + mp4`).toBe(true);
      expect(startsLikeVideo(Buffer.concat([filler(t), sampleMp4().subarray(32)])), `${t} + moov`).toBe(true);
      expect(startsLikeVideo(Buffer.concat([filler(t), box(32, 'mdat')])), `${t} + mdat`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([filler(t), u32(1000), Buffer.from('moov'), page])), `${t} + moov header + page`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([filler(t), u32(8), Buffer.from('ftyp'), page])), `${t} + 8-byte ftyp`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([filler(t), filler('free', 12), filler('skip'), sampleMp4()])), `${t}, free, skip + mp4`).toBe(true);
      // A filler that is the whole file, runs to its end (size 0), or past the bytes looked at.
      expect(startsLikeVideo(filler(t)), `${t} alone`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([u32(0), Buffer.from(t), page])), `${t} size 0`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([filler(t, 96), sampleMp4()])), `${t} 96`).toBe(false);
      expect(startsLikeVideo(Buffer.concat([u32(4), Buffer.from(t), sampleMp4()])), `${t} size 4`).toBe(false);
      // A range that ends inside or right after the filler: the bytes present fit.
      expect(startsLikeVideo(filler(t), true), `${t} range`).toBe(true);
      expect(startsLikeVideo(Buffer.concat([filler(t), sampleMp4()]).subarray(0, 14), true), `${t} + mp4 range`).toBe(true);
      expect(startsLikeVideo(Buffer.concat([filler(t), page]).subarray(0, 14), true), `${t} + page range`).toBe(false);
    }
    // The first 64 bytes are looked at: six fillers leave room for the ftyp's header and brand, seven do not.
    const afterFillers = (n: number) => Buffer.concat([...Array<Buffer>(n).fill(filler('free')), sampleMp4()]);
    expect(startsLikeVideo(afterFillers(6))).toBe(true);
    expect(startsLikeVideo(afterFillers(7))).toBe(false);
    expect(startsLikeVideo(afterFillers(8))).toBe(false);
  });

  it('video: an mdat or pnot first is refused, a moov first must hold a movie, whatever its size field says', () => {
    const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
    const header = (size: number, t: string) => Buffer.concat([u32(size), Buffer.from(t)]);
    const page = Buffer.from('<!doctype html><html><body>denied: Bearer sk-upstreamSECRET</body></html>');
    for (const t of ['mdat', 'moov', 'pnot']) {
      for (const size of [0, 1, 8, 16, 1000, page.length + 8]) {
        expect(startsLikeVideo(Buffer.concat([header(size, t), page])), `${t} ${size} + page`).toBe(false);
        expect(startsLikeVideo(Buffer.concat([header(size, t), Buffer.alloc(56)])), `${t} ${size} + zeros`).toBe(false);
      }
    }
    // A real movie box first (the sample's, without its ftyp): its movie header is the first child.
    const movie = sampleMp4().subarray(32);
    expect(movie.toString('latin1', 4, 8)).toBe('moov');
    expect(startsLikeVideo(movie)).toBe(true);
    const withSize = (size: number) => Buffer.concat([u32(size), movie.subarray(4)]);
    const withChild = (child: Buffer) => Buffer.concat([movie.subarray(0, 8), child, movie.subarray(16)]);
    expect(startsLikeVideo(withSize(0)), 'to the end of the file').toBe(true);
    expect(startsLikeVideo(Buffer.concat([u32(1), Buffer.from('moov'), Buffer.from('00000000000003ee', 'hex'), movie.subarray(8)])), '64-bit size').toBe(true);
    expect(startsLikeVideo(Buffer.concat([u32(1), Buffer.from('moov'), Buffer.from('0000000000000010', 'hex'), movie.subarray(8)])), '64-bit size, no room').toBe(false);
    expect(startsLikeVideo(withSize(100)), 'a movie header larger than the movie').toBe(false);
    expect(startsLikeVideo(withSize(4)), 'an impossible size').toBe(false);
    expect(startsLikeVideo(withChild(header(16, 'mvhd'))), 'a movie header shorter than version 0').toBe(false);
    expect(startsLikeVideo(withChild(header(4, 'mvhd'))), 'a child of 4 bytes').toBe(false);
    expect(startsLikeVideo(withChild(header(108, 'html'))), 'a child a movie does not hold').toBe(false);
    for (const t of ['trak', 'udta', 'cmov', 'prfl']) expect(startsLikeVideo(withChild(header(108, t))), t).toBe(true);
    // A movie header of version 1 is 120 bytes or more; a version past 1 is no movie header.
    const v = (version: number, size: number) => Buffer.concat([movie.subarray(0, 8), u32(size), Buffer.from('mvhd'), Buffer.from([version]), movie.subarray(17)]);
    expect(startsLikeVideo(v(1, 120))).toBe(true);
    expect(startsLikeVideo(v(1, 108))).toBe(false);
    expect(startsLikeVideo(v(2, 120))).toBe(false);
    // A short range from the first byte: the bytes present must fit.
    expect(startsLikeVideo(movie.subarray(0, 2), true)).toBe(true);
    expect(startsLikeVideo(movie.subarray(0, 12), true)).toBe(true);
    expect(startsLikeVideo(Buffer.concat([header(1000, 'moov'), page]).subarray(0, 12), true)).toBe(false);
    expect(startsLikeVideo(Buffer.concat([header(1000, 'mdat'), page]).subarray(0, 8), true)).toBe(false);
  });

  it('video, a short range from the first byte: only the bytes present count', () => {
    expect(startsLikeVideo(sampleMp4().subarray(0, 2), true)).toBe(true);
    expect(startsLikeVideo(sampleMp4().subarray(0, 6), true)).toBe(true);
    expect(startsLikeVideo(Buffer.from('<html'), true)).toBe(false);
    expect(startsLikeVideo(Buffer.alloc(0), true)).toBe(false);
  });

  it('images', () => {
    expect(imageTypeOf(samplePng())).toBe('image/png');
    expect(imageTypeOf(Buffer.from('ffd8ffe000104a4649460001', 'hex'))).toBe('image/jpeg');
    expect(imageTypeOf(Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00', 'latin1'))).toBe('image/gif');
    expect(imageTypeOf(Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 ')]))).toBe('image/webp');
    expect(imageTypeOf(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg">'))).toBeUndefined();
    expect(imageTypeOf(sampleMp4())).toBeUndefined();
  });

  it('declared types: documents are refused, generic and media types are left to the bytes', () => {
    for (const t of ['text/html', 'TEXT/HTML; charset=utf-8', 'text/plain', 'application/json', 'application/problem+json', 'application/xml', 'image/svg+xml', 'application/xhtml+xml', 'application/javascript', 'multipart/form-data; boundary=x'])
      expect(isDocumentType(t), t).toBe(true);
    for (const t of [undefined, '', 'application/octet-stream', 'binary/octet-stream', 'video/mp4', 'video/webm', 'video/quicktime', 'application/mp4'])
      expect(isDocumentType(t), String(t)).toBe(false);
  });
});
