/**
 * The header of an ISO-BMFF file (MP4, MOV), read without decoding: the movie's duration and the
 * first video track's size. Shared by the upload checks and the simulators that report a video's length.
 */

/**
 * Boxes plus sample entries read per file, so a hostile one costs bounded work (some tens of
 * milliseconds at most): every piece of the walk's work that a file's contents can multiply (a box,
 * a sample entry, each further track a fragment run counts for) is paid from it. An honest minute with a fragment per frame at 60 fps needs about 30,000;
 * a file needing more is reported unread rather than measured short.
 */
export const MAX_MP4_STEPS = 131_072;
/** Real files nest boxes about 6 deep (moov/trak/mdia/minf/stbl/stsd); deeper ones are not read. */
const MAX_DEPTH = 16;
const CONTAINERS = new Set(['moov', 'mdia', 'minf', 'stbl', 'mvex', 'moof']);
/**
 * Real movies hold a handful of tracks (video, sounds, subtitles, timecode). Each costs more to
 * keep than a box costs to read, so past this many the rest go unread rather than kept.
 */
const MAX_TRACKS = 1024;
/**
 * Track IDs are unique within a movie (ISO/IEC 14496-12, tkhd). A few tracks sharing one are still
 * read, each counting the fragments of that ID; more make the file unread, so a run's work stays a
 * few steps however many tracks a file declares.
 */
const MAX_TRACKS_PER_ID = 4;
/** A 32-bit duration of all ones means "unknown" (ISO/IEC 14496-12), not 2^32 - 1 ticks. */
const UNKNOWN32 = 0xffffffff;
/**
 * Video frames shorter than a millisecond on average are not a length anyone plays: a track of
 * many frames timed at (next to) nothing has no credible length, whatever a decoder makes of it.
 */
const MAX_FRAMES_PER_SECOND = 1000;

interface Box {
  type: string;
  start: number;
  end: number;
  body: number;
}

/** The walk's budget, and the first reason part of the file went unread (its length then is not known). */
class Walk {
  private left = MAX_MP4_STEPS;
  unread?: string;
  stop(reason: string): void {
    this.unread ??= reason;
  }
  /** Spend `n` steps; false, and the walk reported unread, when the budget cannot pay them. */
  take(n: number): boolean {
    if (n > this.left) {
      this.left = 0;
      this.stop(`it holds more than ${MAX_MP4_STEPS} boxes and sample entries`);
      return false;
    }
    this.left -= n;
    return true;
  }
}

/**
 * The boxes directly inside [from, to) of an ISO-BMFF file (MP4, MOV). A box running past its
 * parent is cut at the parent's end, as players read it: a file cut short in transfer still
 * measures what it holds, and a fragment cut short still counts its runs.
 */
function eachBox(buf: Buffer, from: number, to: number, walk: Walk, visit: (b: Box) => void): void {
  let pos = from;
  while (pos + 8 <= to && walk.take(1)) {
    let size = buf.readUInt32BE(pos);
    const type = fourcc(buf, pos + 4);
    let body = pos + 8;
    if (size === 1) {
      // Fewer than 16 bytes left cannot hold a box with anything in it: trailing padding.
      if (pos + 16 > to) return;
      const big = buf.readBigUInt64BE(pos + 8);
      size = big > BigInt(to - pos) ? to - pos : Number(big);
      body = pos + 16;
    } else if (size === 0) size = to - pos;
    // Nothing after a box smaller than its own header can be found; another reader may resync and play it.
    if (size < body - pos) return walk.stop(`a '${printable(type)}' box is smaller than its header`);
    const end = Math.min(pos + size, to);
    visit({ type, start: pos, end, body });
    pos = end;
  }
}

/** Built from its four bytes: a string conversion through the Buffer costs more than the rest of a step. */
const fourcc = (buf: Buffer, at: number): string => String.fromCharCode(buf[at]!, buf[at + 1]!, buf[at + 2]!, buf[at + 3]!);

const printable = (type: string): string => type.replace(/[^\x20-\x7e]/g, '?');

/** What one track declares of its length, in its own units. */
interface Track {
  /** Its header (tkhd) has been read: it names the track's ID. */
  named?: boolean;
  /** tkhd's duration, in the movie's timescale. */
  declared?: number;
  timescale?: number;
  /** mdhd's duration, in the track's timescale. */
  media?: number;
  /** The sample table's (stts) sum of sample durations, in the track's timescale. */
  samples: number;
  /** The same summed over movie fragments (trun), in the track's timescale. */
  fragments: number;
  /** Its samples, in the sample table and the fragments. */
  frames: number;
  /**
   * The last handler (hdlr) naming sound or video. Sound's samples are not counted, as an encoder's
   * priming makes an honest audio track's media some milliseconds longer than the movie; its header's length still is.
   */
  kind?: 'soun' | 'vide';
}

const duration = (buf: Buffer, at: number, v1: boolean): number => (v1 ? Number(buf.readBigUInt64BE(at)) : buf.readUInt32BE(at));

/** Sample count and summed durations of an stts box; unread when it claims more entries than it holds. */
function readStts(buf: Buffer, b: Box, walk: Walk): { count: number; ticks: number } {
  const out = { count: 0, ticks: 0 };
  if (b.body + 8 > b.end) return out;
  const n = buf.readUInt32BE(b.body + 4);
  if (n > Math.floor((b.end - b.body - 8) / 8)) {
    walk.stop('a sample table claims more entries than it holds');
    return out;
  }
  if (!walk.take(n)) return out;
  for (let i = 0, p = b.body + 8; i < n; i++, p += 8) {
    out.count += buf.readUInt32BE(p);
    out.ticks += buf.readUInt32BE(p) * buf.readUInt32BE(p + 4);
  }
  return out;
}

/** Sample count and ticks of one trun box: its per-sample durations, else its count at the fragment's default duration. */
function readTrun(buf: Buffer, b: Box, defaultDuration: number, walk: Walk): { count: number; ticks: number } {
  if (b.body + 8 > b.end) return { count: 0, ticks: 0 };
  const flags = buf.readUInt32BE(b.body) & 0xffffff;
  const count = buf.readUInt32BE(b.body + 4);
  const stride = 4 * [0x100, 0x200, 0x400, 0x800].filter((f) => flags & f).length;
  const first = b.body + 8 + (flags & 0x1 ? 4 : 0) + (flags & 0x4 ? 4 : 0);
  // A reader takes a run's samples from the bytes after it when the box ends first: their durations are anyone's guess.
  if (stride > 0 && count > Math.floor((b.end - first) / stride)) {
    walk.stop("a fragment's run claims more samples than it holds");
    return { count: 0, ticks: 0 };
  }
  if (!(flags & 0x100)) return { count, ticks: count * defaultDuration };
  if (!walk.take(count)) return { count: 0, ticks: 0 };
  let ticks = 0;
  for (let i = 0, p = first; i < count; i++, p += stride) ticks += buf.readUInt32BE(p);
  return { count, ticks };
}

export interface Mp4Header {
  seconds?: number;
  width?: number;
  height?: number;
  /**
   * Set when part of the file was not read (too many boxes, too deep, a malformed box or run, a
   * fragment of no track, frames with no credible timing, too many tracks or tracks sharing an ID,
   * a track with two headers): `seconds` is then only a lower bound.
   */
  unread?: string;
}

/**
 * Duration and the first video track's size (tkhd) of an MP4/MOV, where the header says. The
 * duration is the longest any part of the file declares: the movie header's, each track's header
 * and media header, and the sum of its samples' durations (the sample table, and the movie
 * fragments' runs). A player times frames by those samples, whatever the headers claim, so a file
 * whose headers say 0.001 s over 20 s of frames reads as 20 s: a length that holds money cannot be
 * talked down by the header alone. When the walk could not read it all, `unread` says why.
 * Undefined without a movie header.
 */
export function readMp4Header(buf: Buffer): Mp4Header {
  const out: Mp4Header = {};
  const state = new Walk();
  let movieTimescale = 0;
  let movieTicks = 0;
  const tracks: Track[] = [];
  // Where a few tracks share an ID, a fragment counts for every one of them (never for none).
  const byId = new Map<number, Track[]>();
  const trexDefaults = new Map<number, number>();
  let track: Track | undefined;
  let fragment: { id: number; defaultDuration?: number } | undefined;
  const walk = (from: number, to: number, depth = 0): void => {
    if (depth > MAX_DEPTH) {
      if (from + 8 <= to) state.stop(`boxes nest more than ${MAX_DEPTH} deep`);
      return;
    }
    eachBox(buf, from, to, state, (b) => {
      const v1 = buf[b.body] === 1;
      if (CONTAINERS.has(b.type)) walk(b.body, b.end, depth + 1);
      else if (b.type === 'trak') {
        if (tracks.length >= MAX_TRACKS) return state.stop(`it holds more than ${MAX_TRACKS} tracks`);
        const outer = track;
        track = { samples: 0, fragments: 0, frames: 0 };
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
        // A track has one header (ISO/IEC 14496-12); with several, players differ on which names it.
        if (track?.named) state.stop('a track has more than one header (tkhd)');
        else if (track) {
          track.named = true;
          const id = buf.readUInt32BE(b.body + (v1 ? 20 : 12));
          const owners = byId.get(id);
          if (!owners) byId.set(id, [track]);
          else if (owners.length < MAX_TRACKS_PER_ID) owners.push(track);
          else state.stop(`more than ${MAX_TRACKS_PER_ID} tracks share track ID ${id}`);
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
        const kind = fourcc(buf, b.body + 8);
        if (kind === 'soun' || kind === 'vide') track.kind = kind;
      } else if (b.type === 'stts' && track) {
        const s = readStts(buf, b, state);
        track.samples += s.ticks;
        track.frames += s.count;
      } else if (b.type === 'trex' && b.body + 16 <= b.end) {
        trexDefaults.set(buf.readUInt32BE(b.body + 4), buf.readUInt32BE(b.body + 12));
      } else if (b.type === 'tfhd' && fragment && b.body + 8 <= b.end) {
        const flags = buf.readUInt32BE(b.body) & 0xffffff;
        fragment.id = buf.readUInt32BE(b.body + 4);
        const at = b.body + 8 + (flags & 0x1 ? 8 : 0) + (flags & 0x2 ? 4 : 0);
        if (flags & 0x8 && at + 4 <= b.end) fragment.defaultDuration = buf.readUInt32BE(at);
      } else if (b.type === 'trun' && fragment) {
        const run = readTrun(buf, b, fragment.defaultDuration ?? trexDefaults.get(fragment.id) ?? 0, state);
        const owners = byId.get(fragment.id);
        // Fragments follow the moov that names their tracks: a run of a track it does not name has no
        // timescale to measure it by, and a player may still play it, so the file's length is not known.
        if (!owners) {
          if (run.count > 0) state.stop('a movie fragment names no track of the movie');
        } else if (state.take(owners.length - 1))
          // The run's box paid for one track; each further track sharing its ID is a step of its own.
          for (const t of owners) {
            t.fragments += run.ticks;
            t.frames += run.count;
          }
      }
    });
  };
  walk(0, buf.length);
  if (movieTimescale > 0) {
    let seconds = movieTicks / movieTimescale;
    for (const t of tracks) {
      if (t.declared !== undefined) seconds = Math.max(seconds, t.declared / movieTimescale);
      if (t.kind === 'soun') continue;
      // Without a timescale of its own a player times the track by the movie's, or by seconds.
      if (!t.timescale) {
        if (t.frames > 0) state.stop('a track with samples has no timescale');
        continue;
      }
      // A player plays the sample table's samples and then every fragment's: the track lasts their sum.
      const own = Math.max(t.media ?? 0, t.samples + t.fragments) / t.timescale;
      if (t.kind === 'vide' && t.frames > 1 + MAX_FRAMES_PER_SECOND * own)
        state.stop(`its video frames last under ${1000 / MAX_FRAMES_PER_SECOND} ms each`);
      seconds = Math.max(seconds, own);
    }
    out.seconds = seconds;
  }
  if (state.unread) out.unread = state.unread;
  return out;
}
