/**
 * The header of an ISO-BMFF file (MP4, MOV), read without decoding: the movie's duration and the
 * first video track's size. Shared by the upload checks and the simulators that report a video's length.
 */

/** Boxes are walked at most this deep and this many times: a hostile file costs bounded work. */
const MAX_BOXES = 4096;
const CONTAINERS = new Set(['moov', 'trak', 'mdia']);

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

/** Duration (mvhd) and the first video track's size (tkhd) of an MP4/MOV, where the header says. */
export function readMp4Header(buf: Buffer): { seconds?: number; width?: number; height?: number } {
  const out: { seconds?: number; width?: number; height?: number } = {};
  const budget = { left: MAX_BOXES };
  const walk = (from: number, to: number) => {
    for (const b of boxes(buf, from, to, budget)) {
      if (CONTAINERS.has(b.type)) walk(b.body, b.end);
      else if (b.type === 'mvhd' && b.body + 32 <= b.end) {
        const v1 = buf[b.body] === 1;
        const timescale = buf.readUInt32BE(b.body + (v1 ? 20 : 12));
        const duration = v1 ? Number(buf.readBigUInt64BE(b.body + 24)) : buf.readUInt32BE(b.body + 16);
        if (timescale > 0) out.seconds = duration / timescale;
      } else if (b.type === 'tkhd' && out.width === undefined && b.end - b.body >= 84) {
        // width and height are the box's last 8 bytes, 16.16 fixed point; audio tracks say 0x0.
        const w = buf.readUInt32BE(b.end - 8) / 65536;
        const h = buf.readUInt32BE(b.end - 4) / 65536;
        if (w > 0 && h > 0) {
          out.width = Math.round(w);
          out.height = Math.round(h);
        }
      }
    }
  };
  walk(0, buf.length);
  return out;
}
