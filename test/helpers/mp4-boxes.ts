import { sampleMp4 } from '../../src/sim/media.js';

/** ISO-BMFF boxes for tests: a box is its 32-bit size, its four-letter type and its body. */
export function box(type: string, ...body: Buffer[]): Buffer {
  const inner = Buffer.concat(body);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + inner.length);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, inner]);
}

export function u32(...ns: number[]): Buffer {
  const b = Buffer.alloc(4 * ns.length);
  ns.forEach((n, i) => b.writeUInt32BE(n >>> 0, 4 * i));
  return b;
}

/**
 * The committed 2-second sample (48 frames of 1/24 s in its sample table) with every duration its
 * headers declare (movie, track, media) rewritten to `ticks` of their timescales: a player still
 * plays 2 s (it times frames by the sample table), only the headers lie.
 */
export function sampleWithLyingHeaders(ticks: number): Buffer {
  const b = Buffer.from(sampleMp4());
  // Offsets in fixtures/sample.mp4 (all version 0 boxes): mvhd at 40, tkhd at 156, mdhd at 292.
  b.writeUInt32BE(ticks, 40 + 8 + 16);
  b.writeUInt32BE(ticks, 156 + 8 + 20);
  b.writeUInt32BE(ticks, 292 + 8 + 16);
  return b;
}

/**
 * A fragmented MP4 of one 320x180 video track whose movie header claims `movieTicks` of 1/1000 s
 * while its movie fragments carry `fragments` runs of 24 samples of 1/24 s each (1 s a run).
 * Only the boxes a header reader looks at, and no picture: nothing decodes it.
 */
export function fragmentedMp4(movieTicks: number, fragments: number): Buffer {
  const mvhd = box('mvhd', u32(0, 0, 0, 1000, movieTicks, 0x00010000), Buffer.alloc(76));
  const tkhd = box('tkhd', u32(0x7, 0, 0, 1, 0, movieTicks), Buffer.alloc(52), u32(320 << 16, 180 << 16));
  const mdhd = box('mdhd', u32(0, 0, 0, 24, 0), Buffer.alloc(4));
  const hdlr = box('hdlr', u32(0, 0), Buffer.from('vide'), Buffer.alloc(13));
  const stbl = box('stbl', box('stts', u32(0, 0)));
  const trak = box('trak', tkhd, box('mdia', mdhd, hdlr, box('minf', stbl)));
  const mvex = box('mvex', box('trex', u32(0, 1, 1, 0, 0, 0)));
  const moofs: Buffer[] = [];
  for (let i = 0; i < fragments; i++) {
    // tfhd: track 1, default sample duration (flag 0x08) of one tick; trun: 24 samples with their own durations (flag 0x100).
    const trun = box('trun', u32(0x100, 24), u32(...Array<number>(24).fill(1)));
    moofs.push(box('moof', box('mfhd', u32(0, i + 1)), box('traf', box('tfhd', u32(0x08, 1, 1)), trun)), box('mdat', Buffer.alloc(16)));
  }
  return Buffer.concat([box('ftyp', Buffer.from('isom'), u32(0x200), Buffer.from('isomiso6mp41')), box('moov', mvhd, trak, mvex), ...moofs]);
}
