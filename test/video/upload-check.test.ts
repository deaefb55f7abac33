import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { checkUpload } from '../../src/video/uploads.js';

/**
 * The upload check's cost on crafted JPEGs, and the JPEGs it reads itself. A JPEG's size used to be
 * read by a header sniffer that, once out of step (a fill byte before a marker, which the standard
 * allows), walked the rest of the file a byte at a time: about a second of blocked event loop per
 * 10 MB, and a valid file refused. The size now comes from the frame header the container check
 * finds, after that bounded check.
 */
const hex = (h: string) => Buffer.from(h.replace(/ /g, ''), 'hex');
const SOI = hex('ffd8');
const APP0 = hex('ffe0 0010 4a46494600 0101 00 0001 0001 0000');
const frame = (marker: string) => hex(`ff${marker} 000b 08 0030 0040 01 01 11 00`); // 64 wide, 48 high
const SOS = hex('ffda 0008 01 01 00 00 3f 00');
const EOI = hex('ffd9');
const TEN_MIB = 10 * 1024 * 1024; // the default video.uploads.max_bytes

function refusal(f: () => unknown): GatewayError {
  try {
    f();
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error('not refused');
}

describe('checkUpload on JPEGs', () => {
  it('a 10 MiB JPEG with a fill byte before its frame header is read at once', () => {
    const crafted = Buffer.concat([SOI, APP0, hex('ff'), frame('c0'), SOS, Buffer.alloc(TEN_MIB - 64), EOI]);
    const started = performance.now();
    const checked = checkUpload(crafted, 'input_reference');
    expect(performance.now() - started).toBeLessThan(250);
    expect(checked).toMatchObject({ mime: 'image/jpeg', width: 64, height: 48 });
  });

  it('a 10 MiB arithmetic-coded JPEG is refused at once, as a JPEG of a coding vendors do not take', () => {
    const crafted = Buffer.concat([SOI, APP0, frame('c9'), SOS, Buffer.alloc(TEN_MIB - 64), EOI]);
    const started = performance.now();
    const e = refusal(() => checkUpload(crafted, 'input_reference'));
    expect(performance.now() - started).toBeLessThan(250);
    expect(e).toMatchObject({ status: 400, code: 'unsupported_media_type', param: 'input_reference' });
    expect(e.message).toMatch(/arithmetic-coded JPEG/);
  });

  it('fill bytes between real segments: the fixture so padded is taken with its size', () => {
    const jpg = readFileSync(new URL('../../fixtures/frame.jpg', import.meta.url));
    const plain = checkUpload(jpg, 'input_reference');
    // After APP0 (at byte 2, its length at 4), three FF fill bytes before the next marker.
    const next = 4 + jpg.readUInt16BE(4);
    const padded = Buffer.concat([jpg.subarray(0, next), hex('ffffff'), jpg.subarray(next)]);
    expect(checkUpload(padded, 'input_reference')).toEqual(plain);
  });
});
