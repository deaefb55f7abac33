import type { SimReply, SimRequest } from '../../../sim/framework.js';
import { sampleMp4, syntheticVideo } from '../../../sim/media.js';

/**
 * The Cloud Storage JSON API read path for simulated results: `?alt=media` returns the bytes
 * (HTTP Range honoured: 206 / 416 as GCS does), anything else the object's metadata resource.
 */
export function serveObject(req: SimRequest, bucket: string, object: string, videoBytes?: number): SimReply {
  const size = typeof videoBytes === 'number' && videoBytes > 0 ? videoBytes : sampleMp4().length;
  if (req.query.get('alt') !== 'media') {
    return {
      json: {
        kind: 'storage#object',
        id: `${bucket}/${object}/1`,
        name: object,
        bucket,
        contentType: 'video/mp4',
        size: String(size),
        mediaLink: `/download/storage/v1/b/${bucket}/o/${encodeURIComponent(object)}?alt=media`,
      },
    };
  }
  const base = { 'content-type': 'video/mp4', 'accept-ranges': 'bytes', 'x-goog-stored-content-length': String(size) };
  const range = parseRange(req.headers['range'], size);
  if (range === 'unsatisfiable') {
    return {
      status: 416,
      headers: { 'content-range': `bytes */${size}` },
      json: { error: { code: 416, message: 'The requested range cannot be satisfied.', errors: [{ domain: 'global', reason: 'requestedRangeNotSatisfiable' }] } },
    };
  }
  const [start, end] = range ?? [0, size - 1];
  const headers: Record<string, string> = { ...base, 'content-length': String(end - start + 1) };
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`;
  const status = range ? 206 : 200;
  if (typeof videoBytes === 'number' && videoBytes > 0) return { status, headers, body: syntheticVideo(size, start, end) };
  return { status, headers, body: sampleMp4().subarray(start, end + 1) };
}

/** One `bytes=` range (first-last, first-, or -suffix); several ranges are answered whole, like GCS. */
function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return undefined;
  const [, a, b] = m as unknown as [string, string, string];
  if (a === '' && b === '') return undefined;
  if (a === '') {
    const n = Number(b);
    if (n === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(a);
  if (start >= size) return 'unsatisfiable';
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (end < start) return undefined;
  return [start, end];
}
