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

const ftyp = (): Buffer => box('ftyp', Buffer.from('isom'), u32(0x200), Buffer.from('isomiso6mp41'));

export interface FragmentedOptions {
  /** Boxes between the moov and the first fragment (e.g. `free` padding). */
  afterMoov?: Buffer[];
  /** The track ID the fragments name; the video track is 1. */
  fragmentTrack?: number;
  /** Each fragment sample's duration in ticks of 1/24 s (1 unless told). */
  sampleTicks?: number;
  /** Samples the moov's own sample table (stts) holds before the fragments, 1/24 s each. */
  tableSamples?: number;
  /** Sound tracks after the video track, with these track IDs. */
  soundTrackIds?: number[];
}

/** A track of `kind` ('vide' or 'soun') with ID `id`, declaring `movieTicks` of 1/1000 s and `tableSamples` samples of 1/24 s. */
function trak(kind: string, id: number, movieTicks: number, tableSamples: number): Buffer {
  const tkhd = box('tkhd', u32(0x7, 0, 0, id, 0, movieTicks), Buffer.alloc(52), kind === 'vide' ? u32(320 << 16, 180 << 16) : u32(0, 0));
  const mdhd = box('mdhd', u32(0, 0, 0, 24, 0), Buffer.alloc(4));
  const hdlr = box('hdlr', u32(0, 0), Buffer.from(kind), Buffer.alloc(13));
  const stts = tableSamples > 0 ? box('stts', u32(0, 1, tableSamples, 1)) : box('stts', u32(0, 0));
  return box('trak', tkhd, box('mdia', mdhd, hdlr, box('minf', box('stbl', stts))));
}

/**
 * A fragmented MP4 of one 320x180 video track whose movie header claims `movieTicks` of 1/1000 s
 * while its movie fragments carry `fragments` runs of 24 samples of 1/24 s each (1 s a run).
 * Only the boxes a header reader looks at, and no picture: nothing decodes it.
 */
export function fragmentedMp4(movieTicks: number, fragments: number, opts: FragmentedOptions = {}): Buffer {
  const mvhd = box('mvhd', u32(0, 0, 0, 1000, movieTicks, 0x00010000), Buffer.alloc(76));
  const traks = [trak('vide', 1, movieTicks, opts.tableSamples ?? 0)];
  for (const id of opts.soundTrackIds ?? []) traks.push(trak('soun', id, movieTicks, 0));
  const mvex = box('mvex', box('trex', u32(0, 1, 1, 0, 0, 0)));
  const moofs: Buffer[] = [];
  for (let i = 0; i < fragments; i++) {
    // tfhd: the track, default sample duration (flag 0x08) of one tick; trun: 24 samples with their own durations (flag 0x100).
    const trun = box('trun', u32(0x100, 24), u32(...Array<number>(24).fill(opts.sampleTicks ?? 1)));
    const tfhd = box('tfhd', u32(0x08, opts.fragmentTrack ?? 1, 1));
    moofs.push(box('moof', box('mfhd', u32(0, i + 1)), box('traf', tfhd, trun)), box('mdat', Buffer.alloc(16)));
  }
  return Buffer.concat([ftyp(), box('moov', mvhd, ...traks, mvex), ...(opts.afterMoov ?? []), ...moofs]);
}

/**
 * A movie of bare tracks (a 320x180 track header and nothing else, 100 bytes each) with these track
 * IDs, then one fragment of `runs` empty runs of the first ID: the most tracks, and runs of them,
 * that a file's bytes can declare.
 */
export function bareTracksMp4(trackIds: number[], runs: number): Buffer {
  const mvhd = box('mvhd', u32(0, 0, 0, 1000, 1000, 0x00010000), Buffer.alloc(76));
  const bare = (id: number): Buffer => box('trak', box('tkhd', u32(0, 0, 0, id, 0, 1000), Buffer.alloc(52), u32(320 << 16, 180 << 16)));
  const traks = trackIds.map(bare);
  const run = box('trun', u32(0, 0));
  const traf = box('traf', box('tfhd', u32(0, trackIds[0] ?? 1)), Buffer.concat(Array<Buffer>(runs).fill(run)));
  return Buffer.concat([ftyp(), box('moov', mvhd, Buffer.concat(traks)), box('moof', traf)]);
}

/** `n` empty `free` boxes of 8 bytes: padding a player skips. */
export const freeBoxes = (n: number): Buffer[] => Array<Buffer>(n).fill(box('free'));

/** The top-level boxes of an MP4, with their offsets. */
export function topLevel(buf: Buffer): { type: string; start: number; end: number }[] {
  const out = [];
  for (let pos = 0; pos + 8 <= buf.length; ) {
    const end = pos + Math.max(8, buf.readUInt32BE(pos));
    out.push({ type: buf.toString('latin1', pos + 4, pos + 8), start: pos, end });
    pos = end;
  }
  return out;
}

/**
 * A real file (from an encoder) with its movie header's duration set to `ticks` and `padding`
 * inserted right after its moov: the frames, and what a player plays, are unchanged.
 */
export function withLyingMovieHeader(file: Buffer, ticks: number, padding: Buffer[] = []): Buffer {
  const b = Buffer.from(file);
  const moov = topLevel(b).find((x) => x.type === 'moov')!;
  // mvhd is the moov's first box in encoders' output; version 0 puts its duration 16 bytes into the body.
  if (b.toString('latin1', moov.start + 12, moov.start + 16) !== 'mvhd' || b[moov.start + 16] !== 0) throw new Error('unexpected moov layout');
  b.writeUInt32BE(ticks, moov.start + 16 + 16);
  return Buffer.concat([b.subarray(0, moov.end), ...padding, b.subarray(moov.end)]);
}
