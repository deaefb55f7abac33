import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';

/** The committed fixtures: a real, playable 2-second H.264 MP4 and a small PNG. */
const root = new URL('../../fixtures/', import.meta.url);
let mp4: Buffer | undefined;
let png: Buffer | undefined;

export function sampleMp4(): Buffer {
  mp4 ??= readFileSync(fileURLToPath(new URL('sample.mp4', root)));
  return mp4;
}

export function samplePng(): Buffer {
  png ??= readFileSync(fileURLToPath(new URL('frame.png', root)));
  return png;
}

/**
 * A large synthetic video body of exactly `size` bytes: the real MP4 followed by filler, produced
 * lazily in 64 KiB chunks so that the simulator itself never holds the whole thing.
 */
export function syntheticVideo(size: number, start = 0, end = size - 1): Readable {
  const head = sampleMp4();
  const filler = Buffer.alloc(64 * 1024, 0x2e);
  let pos = start;
  return new Readable({
    read() {
      if (pos > end) {
        this.push(null);
        return;
      }
      const n = Math.min(filler.length, end - pos + 1);
      let chunk: Buffer;
      if (pos < head.length) chunk = head.subarray(pos, Math.min(head.length, pos + n));
      else chunk = filler.subarray(0, n);
      pos += chunk.length;
      this.push(chunk);
    },
  });
}
