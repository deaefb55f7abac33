import { Readable } from 'node:stream';
import { discard, guard } from '../http/streams.js';

export type ByteRange = { start: number; end: number };

/**
 * Parses a single-range `Range: bytes=...` header against a known size.
 * Returns undefined when there is no usable range (serve the whole body), 'unsatisfiable' for 416.
 * Multi-range requests are served whole, which RFC 9110 allows.
 */
export function parseRange(header: string | undefined, size: number | undefined): ByteRange | 'unsatisfiable' | undefined {
  const m = singleRangeSpec(header);
  if (!m || size === undefined) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

/** The first and last positions of a single-range `Range: bytes=a-b`, `bytes=a-` or `bytes=-n` (as written), or undefined for any other header. */
function singleRangeSpec(header: string | undefined): [string, string, string] | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec((header ?? '').trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  return [m[0], m[1]!, m[2]!];
}

/**
 * The Range header sent on to the vendor: only a single byte range, the one form whose answer the
 * gateway can check (its start must be the one asked for). Several ranges or a malformed header
 * are served whole, as when the gateway serves its own copy, so nothing of them is sent.
 */
export function forwardedRange(header: string | undefined): string | undefined {
  return singleRangeSpec(header)?.[0];
}

/** A vendor's `Content-Range: bytes <start>-<end>/<total|*>`, read as numbers. */
export type AnsweredRange = ByteRange & { total: number | undefined };

/**
 * Reads the Content-Range of a vendor's 206: integers only (safe ones), start <= end, end < total
 * (or total `*`). Anything else is undefined: the header is the vendor's text and is never passed
 * on as it is, only rebuilt from these numbers (`contentRangeOf`).
 */
export function parseContentRange(header: string | undefined): AnsweredRange | undefined {
  const m = /^bytes (\d{1,15})-(\d{1,15})\/(\d{1,15}|\*)$/i.exec(header ?? '');
  if (!m) return undefined;
  const start = Number(m[1]);
  const end = Number(m[2]);
  const total = m[3] === '*' ? undefined : Number(m[3]);
  if (start > end || (total !== undefined && end >= total)) return undefined;
  return { start, end, total };
}

export function contentRangeOf(r: AnsweredRange): string {
  return `bytes ${r.start}-${r.end}/${r.total ?? '*'}`;
}

/**
 * Where the answer to the single range `sent` must start: its first position, or for a suffix
 * (`bytes=-n`) the last n bytes of the answer's total. Undefined when it cannot be known (a suffix
 * answered with total `*`).
 */
export function requestedStart(sent: string, total: number | undefined): number | undefined {
  const m = singleRangeSpec(sent);
  if (!m) return undefined;
  if (m[1] !== '') return Number(m[1]);
  return total === undefined ? undefined : Math.max(0, total - Number(m[2]));
}

/**
 * Cuts bytes [start, end] out of chunks given in order: each call answers the part of the chunk
 * inside the range (if any) and whether the range is now complete.
 */
function cutter(start: number, end: number): (chunk: Buffer) => { part?: Buffer; done: boolean } {
  let pos = 0;
  return (chunk) => {
    const from = Math.max(start - pos, 0);
    const to = Math.min(end - pos + 1, chunk.length);
    pos += chunk.length;
    const part = to > from ? (from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to)) : undefined;
    return { part, done: pos > end };
  };
}

/**
 * Bytes [start, end] of `source` (an upstream body from a vendor that ignored Range), as a stream of
 * their own. As soon as the last wanted byte is handed on, the source is destroyed: a player's
 * `bytes=0-1` probe of a 200 MB video must not download the other 200 MB from the vendor. A consumer
 * that leaves early releases the source too, and a source that fails or closes before the range is
 * complete fails the slice (the client's response then ends short of its announced length).
 * Reading follows the consumer's pace, so a slow client never makes the gateway buffer the body.
 */
export function sliceBody(source: Readable, start: number, end: number): Readable {
  const cut = cutter(start, end);
  // Destroying an unfinished upstream body makes it emit an error: it must never be uncaught.
  guard(source);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('error', onError);
    source.off('close', onClose);
    // Stops the download and frees its connection (after the end of the body, nothing is left to stop).
    discard(source);
  };
  const out = new Readable({
    read() {
      if (!released) source.resume();
    },
    destroy(err, cb) {
      release();
      cb(err);
    },
  });
  // Whoever consumes the slice sees its errors; this only keeps one with no listener from crashing.
  guard(out);
  function onData(chunk: Buffer): void {
    const r = cut(chunk);
    const more = r.part ? out.push(r.part) : true;
    if (r.done) {
      release();
      out.push(null);
    } else if (!more) source.pause();
  }
  // A body shorter than the range ends the slice as it is, as the whole-body path would.
  function onEnd(): void {
    release();
    out.push(null);
  }
  function onError(err: Error): void {
    release();
    out.destroy(err);
  }
  function onClose(): void {
    if (released) return;
    release();
    out.destroy(Object.assign(new Error('the upstream body closed before the range was complete'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
  }
  source.on('data', onData);
  source.on('end', onEnd);
  source.on('error', onError);
  source.on('close', onClose);
  return out;
}
