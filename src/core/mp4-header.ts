/**
 * The header of an ISO-BMFF file (MP4, MOV), read without decoding: the movie's duration and the
 * first video track's size. Shared by the upload checks and the simulators that report a video's length.
 */

/** Boxes are walked at most this many times and this deep: a hostile file costs bounded work and stack. */
const MAX_BOXES = 4096;
/** Real files nest boxes about 6 deep (moov/trak/mdia/minf/stbl/stsd); deeper ones are not read. */
const MAX_DEPTH = 16;
const CONTAINERS = new Set(['moov', 'mdia', 'minf', 'stbl', 'mvex', 'moof']);
/** A 32-bit duration of all ones means "unknown" (ISO/IEC 14496-12), not 2^32 - 1 ticks. */
const UNKNOWN32 = 0xffffffff;

interface Box {
  type: string;
  start: number;
  end: number;
  body: number;
}

/** The boxes directly inside [from, to) of an ISO-BMFF file (MP4, MOV). */
function* boxes(buf: Buffer, from: number, to: number, budget: { left: number }): Generator<Box> {
  let pos = from;
  while (pos + 8 <= to && budget.left-- > 0) {
    let size = buf.readUInt32BE(pos);
    const type = buf.toString('latin1', pos + 4, pos + 8);
    let body = pos + 8;
    if (size === 1) {
      if (pos + 16 > to) return;
      const big = buf.readBigUInt64BE(pos + 8);
      if (big > BigInt(to - pos)) return;
      size = Number(big);
      body = pos + 16;
    } else if (size === 0) size = to - pos;
    if (size < body - pos || pos + size > to) return;
    yield { type, start: pos, end: pos + size, body };
    pos += size;
  }
}

/** What one track declares of its length, in its own units. */
interface Track {
  /** tkhd's duration, in the movie's timescale. */
  declared?: number;
  timescale?: number;
  /** mdhd's duration, in the track's timescale. */
  media?: number;
  /** The sample table's (stts) sum of sample durations, in the track's timescale. */
  samples: number;
  /** The same summed over movie fragments (trun), in the track's timescale. */
  fragments: number;
  /**
   * Sound (hdlr 'soun'): its samples are not counted, as an encoder's priming makes an honest
   * audio track's media some milliseconds longer than the movie; its header's length still is.
   */
  audio?: boolean;
}

const duration = (buf: Buffer, at: number, v1: boolean): number => (v1 ? Number(buf.readBigUInt64BE(at)) : buf.readUInt32BE(at));

/** Sum of an stts box's sample_count x sample_delta, its entries bounded by the box. */
function sttsTicks(buf: Buffer, b: Box): number {
  if (b.body + 8 > b.end) return 0;
  const n = Math.min(buf.readUInt32BE(b.body + 4), Math.floor((b.end - b.body - 8) / 8));
  let sum = 0;
  for (let i = 0, p = b.body + 8; i < n; i++, p += 8) sum += buf.readUInt32BE(p) * buf.readUInt32BE(p + 4);
  return sum;
}

/** Ticks of one trun box: its per-sample durations, else its count at the fragment's default duration. */
function trunTicks(buf: Buffer, b: Box, defaultDuration: number): number {
  if (b.body + 8 > b.end) return 0;
  const flags = buf.readUInt32BE(b.body) & 0xffffff;
  const count = buf.readUInt32BE(b.body + 4);
  if (!(flags & 0x100)) return count * defaultDuration;
  let p = b.body + 8 + (flags & 0x1 ? 4 : 0) + (flags & 0x4 ? 4 : 0);
  const stride = 4 * [0x100, 0x200, 0x400, 0x800].filter((f) => flags & f).length;
  let sum = 0;
  for (let i = 0; i < count && p + 4 <= b.end; i++, p += stride) sum += buf.readUInt32BE(p);
  return sum;
}

/**
 * Duration and the first video track's size (tkhd) of an MP4/MOV, where the header says. The
 * duration is the longest any part of the file declares: the movie header's, each track's header
 * and media header, and the sum of its samples' durations (the sample table, and the movie
 * fragments' runs). A player times frames by those samples, whatever the headers claim, so a file
 * whose headers say 0.001 s over 20 s of frames reads as 20 s: a length that holds money cannot be
 * talked down by the header alone. Undefined without a movie header.
 */
export function readMp4Header(buf: Buffer): { seconds?: number; width?: number; height?: number } {
  const out: { seconds?: number; width?: number; height?: number } = {};
  const budget = { left: MAX_BOXES };
  let movieTimescale = 0;
  let movieTicks = 0;
  const tracks: Track[] = [];
  const byId = new Map<number, Track>();
  const trexDefaults = new Map<number, number>();
  let track: Track | undefined;
  let fragment: { track?: Track; id: number; defaultDuration?: number } | undefined;
  const walk = (from: number, to: number, depth = 0): void => {
    if (depth > MAX_DEPTH) return;
    for (const b of boxes(buf, from, to, budget)) {
      const v1 = buf[b.body] === 1;
      if (CONTAINERS.has(b.type)) walk(b.body, b.end, depth + 1);
      else if (b.type === 'trak') {
        const outer = track;
        track = { samples: 0, fragments: 0 };
        tracks.push(track);
        walk(b.body, b.end, depth + 1);
        track = outer;
      } else if (b.type === 'traf') {
        const outer = fragment;
        fragment = { id: -1 };
        walk(b.body, b.end, depth + 1);
        fragment = outer;
      } else if (b.type === 'mvhd' && b.body + 32 <= b.end) {
        movieTimescale = buf.readUInt32BE(b.body + (v1 ? 20 : 12));
        movieTicks = Math.max(movieTicks, duration(buf, b.body + (v1 ? 24 : 16), v1));
      } else if (b.type === 'mehd' && b.body + (v1 ? 12 : 8) <= b.end) {
        movieTicks = Math.max(movieTicks, duration(buf, b.body + 4, v1));
      } else if (b.type === 'tkhd' && b.end - b.body >= 84) {
        if (track) {
          byId.set(buf.readUInt32BE(b.body + (v1 ? 20 : 12)), track);
          const d = duration(buf, b.body + (v1 ? 28 : 20), v1);
          if (v1 || d !== UNKNOWN32) track.declared = d;
        }
        // width and height are the box's last 8 bytes, 16.16 fixed point; audio tracks say 0x0.
        const w = buf.readUInt32BE(b.end - 8) / 65536;
        const h = buf.readUInt32BE(b.end - 4) / 65536;
        if (out.width === undefined && w > 0 && h > 0) {
          out.width = Math.round(w);
          out.height = Math.round(h);
        }
      } else if (b.type === 'mdhd' && track && b.body + (v1 ? 32 : 20) <= b.end) {
        track.timescale = buf.readUInt32BE(b.body + (v1 ? 20 : 12));
        const d = duration(buf, b.body + (v1 ? 24 : 16), v1);
        if (v1 || d !== UNKNOWN32) track.media = d;
      } else if (b.type === 'hdlr' && track && b.body + 12 <= b.end) {
        // The last handler naming sound or video decides, as in players (a MOV's data handler in
        // minf names neither): a track cannot pass as sound to the gateway and as video to a player.
        const kind = buf.toString('latin1', b.body + 8, b.body + 12);
        if (kind === 'soun' || kind === 'vide') track.audio = kind === 'soun';
      } else if (b.type === 'stts' && track) {
        track.samples += sttsTicks(buf, b);
      } else if (b.type === 'trex' && b.body + 16 <= b.end) {
        trexDefaults.set(buf.readUInt32BE(b.body + 4), buf.readUInt32BE(b.body + 12));
      } else if (b.type === 'tfhd' && fragment && b.body + 8 <= b.end) {
        const flags = buf.readUInt32BE(b.body) & 0xffffff;
        fragment.id = buf.readUInt32BE(b.body + 4);
        const at = b.body + 8 + (flags & 0x1 ? 8 : 0) + (flags & 0x2 ? 4 : 0);
        if (flags & 0x8 && at + 4 <= b.end) fragment.defaultDuration = buf.readUInt32BE(at);
      } else if (b.type === 'trun' && fragment) {
        // Fragments follow the moov that names their tracks; one naming no track counts for none.
        fragment.track ??= byId.get(fragment.id);
        if (fragment.track) fragment.track.fragments += trunTicks(buf, b, fragment.defaultDuration ?? trexDefaults.get(fragment.id) ?? 0);
      }
    }
  };
  walk(0, buf.length);
  if (movieTimescale > 0) {
    let seconds = movieTicks / movieTimescale;
    for (const t of tracks) {
      if (t.declared !== undefined) seconds = Math.max(seconds, t.declared / movieTimescale);
      if (t.timescale && !t.audio) seconds = Math.max(seconds, (t.media ?? 0) / t.timescale, t.samples / t.timescale, t.fragments / t.timescale);
    }
    out.seconds = seconds;
  }
  return out;
}
