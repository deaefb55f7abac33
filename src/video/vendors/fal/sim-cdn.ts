import type { Readable } from 'node:stream';
import type { SimReply, SimRequest } from '../../../sim/framework.js';

/**
 * Serves a stored file the way fal's CDN does: public, `accept-ranges: bytes`, a single byte range
 * answered with 206 + content-range, an unsatisfiable one with 416.
 */
export function serveBytes(
  req: SimRequest,
  size: number,
  slice: (start: number, end: number) => Buffer | Readable,
): SimReply {
  const base = { 'content-type': 'video/mp4', 'accept-ranges': 'bytes' };
  const range = req.headers['range'];
  if (!range) {
    const headers = { ...base, 'content-length': String(size) };
    return req.method === 'HEAD' ? { status: 200, headers } : { status: 200, headers, body: slice(0, size - 1) };
  }
  const r = parseRange(range, size);
  if (r === 'ignore') return { status: 200, headers: { ...base, 'content-length': String(size) }, body: slice(0, size - 1) };
  if (r === 'unsatisfiable') return { status: 416, headers: { 'content-range': `bytes */${size}` }, body: '' };
  const headers = { ...base, 'content-length': String(r.end - r.start + 1), 'content-range': `bytes ${r.start}-${r.end}/${size}` };
  return req.method === 'HEAD' ? { status: 206, headers } : { status: 206, headers, body: slice(r.start, r.end) };
}

/** One `bytes=` range; multi-range and malformed headers are ignored (full body), as RFC 9110 allows. */
function parseRange(h: string, size: number): { start: number; end: number } | 'ignore' | 'unsatisfiable' {
  const m = /^bytes=(\d*)-(\d*)$/.exec(h.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'ignore';
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}
