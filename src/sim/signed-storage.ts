import type { SimReply, SimRequest, SimServer } from './framework.js';
import { serveVideo } from './media.js';

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

/** The objects each simulated bucket holds: only those it has handed out URLs for, and only until it restarts. */
const objects = new WeakMap<SimServer, Set<string>>();

/** A pre-signed URL on the simulator for `path` (the object then exists in the bucket). */
export function signedUrl(sim: SimServer, path: string, store: SignedStore): string {
  let held = objects.get(sim);
  if (!held) objects.set(sim, (held = new Set()));
  held.add(path);
  return `${sim.url}${path}?${new URLSearchParams(store.sign(Date.now())).toString()}`;
}

export function serveSignedVideo(req: SimRequest, sim: SimServer, store: SignedStore): SimReply {
  // Storage signs the URL itself; a request that also carries an Authorization header is refused.
  if (req.headers['authorization']) return store.error(400, 'InvalidArgument', 'Authorization header is not allowed with a pre-signed URL.');
  if (!req.query.get(store.signatureParam)) return store.error(403, 'AccessDenied', 'Request signature is missing.');
  const expires = store.expiresAt(req.query);
  if (!Number.isFinite(expires) || expires < Date.now()) return store.error(403, 'AccessDenied', 'Request has expired.');
  // A deleted (expired) object answers 404 NoSuchKey at both OSS and TOS, even with a valid signature.
  if (!objects.get(sim)?.has(req.path)) return store.error(404, 'NoSuchKey', 'The specified key does not exist.');

  return serveVideo(req, sim.settings.videoBytes);
}
