import type { SimReply, SimRequest } from './framework.js';
import { sampleMp4, serveVideo } from './media.js';

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
  return serveVideo(req, videoBytes, {
    headers: { 'x-goog-stored-content-length': String(size) },
    unsatisfiable: (n) => ({
      status: 416,
      headers: { 'content-range': `bytes */${n}` },
      json: { error: { code: 416, message: 'The requested range cannot be satisfied.', errors: [{ domain: 'global', reason: 'requestedRangeNotSatisfiable' }] } },
    }),
  });
}
