import type { SimReply, SimRequest, SimServer } from '../../../sim/framework.js';
import { sampleMp4, syntheticVideo } from '../../../sim/media.js';

/**
 * Simulated object storage for finished videos (Alibaba OSS for wan, Volcengine TOS for seedance):
 * pre-signed URLs that need no auth header, expire, and honour HTTP Range like the real buckets.
 * Also used by the seedance simulator.
 */
export interface SignedStore {
  /** Query parameter that must be present (the signature). */
  signatureParam: string;
  /** The query a fresh pre-signed URL carries (credential, dates, signature). */
  sign(nowMs: number): Record<string, string>;
  /** When a URL stops working, in epoch ms, read back from its query. */
  expiresAt(query: URLSearchParams): number;
  /** The storage's own error body. */
  error(status: number, code: string, message: string): SimReply;
}

/** Result URLs stay valid for 24 hours at both vendors. */
export const URL_LIFETIME_S = 24 * 3600;

export const ossStore: SignedStore = {
  signatureParam: 'Signature',
  sign: (nowMs) => ({
    OSSAccessKeyId: 'LTAI5tSimulatorKey',
    Expires: String(Math.floor(nowMs / 1000) + URL_LIFETIME_S),
    Signature: 'c2ltLW9zcy1zaWduYXR1cmU=',
  }),
  expiresAt: (q) => Number(q.get('Expires')) * 1000,
  error: (status, code, message) => ({
    status,
    headers: { 'content-type': 'application/xml' },
    body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error>\n  <Code>${code}</Code>\n  <Message>${message}</Message>\n  <RequestId>sim</RequestId>\n</Error>\n`,
  }),
};

/** A pre-signed URL on the simulator for `path`. */
export function signedUrl(sim: SimServer, path: string, store: SignedStore): string {
  return `${sim.url}${path}?${new URLSearchParams(store.sign(Date.now())).toString()}`;
}

type Range = { start: number; end: number } | 'unsatisfiable' | undefined;

/** A single `bytes=` range; several ranges at once are answered with the whole body, as storage may. */
export function parseRange(header: string | undefined, size: number): Range {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
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

export function serveSignedVideo(req: SimRequest, sim: SimServer, store: SignedStore): SimReply {
  // Storage signs the URL itself; a request that also carries an Authorization header is refused.
  if (req.headers['authorization']) return store.error(400, 'InvalidArgument', 'Authorization header is not allowed with a pre-signed URL.');
  if (!req.query.get(store.signatureParam)) return store.error(403, 'AccessDenied', 'Request signature is missing.');
  const expires = store.expiresAt(req.query);
  if (!Number.isFinite(expires) || expires < Date.now()) return store.error(403, 'AccessDenied', 'Request has expired.');

  const synthetic = typeof sim.settings.videoBytes === 'number' ? (sim.settings.videoBytes as number) : undefined;
  const size = synthetic ?? sampleMp4().length;
  const base = { 'content-type': 'video/mp4', 'accept-ranges': 'bytes' };
  const range = parseRange(req.headers['range'], size);
  if (range === 'unsatisfiable') {
    return { status: 416, headers: { ...base, 'content-range': `bytes */${size}` }, body: '' };
  }
  const { start, end } = range ?? { start: 0, end: size - 1 };
  const headers: Record<string, string> = { ...base, 'content-length': String(end - start + 1) };
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`;
  const body = synthetic !== undefined ? syntheticVideo(size, start, end) : sampleMp4().subarray(start, end + 1);
  return { status: range ? 206 : 200, headers, body };
}
