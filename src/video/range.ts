import { Transform } from 'node:stream';

export type ByteRange = { start: number; end: number };

/**
 * Parses a single-range `Range: bytes=...` header against a known size.
 * Returns undefined when there is no usable range (serve the whole body), 'unsatisfiable' for 416.
 * Multi-range requests are served whole, which RFC 9110 allows.
 */
export function parseRange(header: string | undefined, size: number | undefined): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (size === undefined) return undefined;
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

/** Passes on only bytes [start, end] of a stream (for upstreams that ignore Range). */
export function sliceStream(start: number, end: number): Transform {
  let pos = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const from = Math.max(start - pos, 0);
      const to = Math.min(end - pos + 1, chunk.length);
      pos += chunk.length;
      if (to > from) this.push(from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to));
      if (pos > end) {
        this.push(null);
      }
      cb();
    },
  });
}
