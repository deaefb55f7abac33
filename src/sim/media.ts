import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import { parseRange } from '../video/range.js';
import { sniffVideo } from '../core/sniff.js';
import type { SimReply, SimRequest } from './framework.js';

/** The committed fixtures: a real, playable 2-second H.264 MP4 and a small PNG. */
const root = new URL('../../fixtures/', import.meta.url);
let mp4: Buffer | undefined;
let png: Buffer | undefined;

export function sampleMp4(): Buffer {
  mp4 ??= readFileSync(fileURLToPath(new URL('sample.mp4', root)));
  return mp4;
}

export function samplePng(): Buffer {
  png ??= readFileSync(fileURLToPath(new URL('frame.png', root)));
  return png;
}

/**
 * A large synthetic video body of exactly `size` bytes: the real MP4 followed by filler, produced
 * lazily in 64 KiB chunks so that the simulator itself never holds the whole thing.
 */
export function syntheticVideo(size: number, start = 0, end = size - 1): Readable {
  const head = sampleMp4();
  const filler = Buffer.alloc(64 * 1024, 0x2e);
  let pos = start;
  return new Readable({
    read() {
      if (pos > end) {
        this.push(null);
        return;
      }
      const n = Math.min(filler.length, end - pos + 1);
      let chunk: Buffer;
      if (pos < head.length) chunk = head.subarray(pos, Math.min(head.length, pos + n));
      else chunk = filler.subarray(0, n);
      pos += chunk.length;
      this.push(chunk);
    },
  });
}

/**
 * The same bytes as `syntheticVideo(size)`, whole: for a simulator that returns its video inside an
 * answer (Veo's base64 `bytesBase64Encoded`) and for checking what the gateway kept of it.
 */
export function syntheticVideoBytes(size: number): Buffer {
  const head = sampleMp4();
  if (size <= head.length) return Buffer.from(head.subarray(0, size));
  const out = Buffer.alloc(size, 0x2e);
  head.copy(out);
  return out;
}

/**
 * Answers a video download the way object storage and CDNs do: the MP4 fixture, or `videoBytes`
 * bytes of synthetic video, with `accept-ranges`, a single byte range as 206 + content-range, an
 * unsatisfiable one as 416 (multi-range and malformed headers get the whole body), HEAD without a
 * body. `unsatisfiable` lets a simulator answer 416 in its vendor's own error shape.
 */
export function serveVideo(
  req: SimRequest,
  videoBytes: unknown,
  opts: { headers?: Record<string, string>; unsatisfiable?: (size: number) => SimReply } = {},
): SimReply {
  const synthetic = typeof videoBytes === 'number' && videoBytes > 0 ? videoBytes : undefined;
  const size = synthetic ?? sampleMp4().length;
  const base = { 'content-type': 'video/mp4', 'accept-ranges': 'bytes', ...(opts.headers ?? {}) };
  const range = parseRange(req.headers['range'], size);
  if (range === 'unsatisfiable') return opts.unsatisfiable?.(size) ?? { status: 416, headers: { 'content-range': `bytes */${size}` }, body: '' };
  const { start, end } = range ?? { start: 0, end: size - 1 };
  const headers: Record<string, string> = { ...base, 'content-length': String(end - start + 1) };
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`;
  const status = range ? 206 : 200;
  if (req.method === 'HEAD') return { status, headers };
  return { status, headers, body: synthetic !== undefined ? syntheticVideo(synthetic, start, end) : sampleMp4().subarray(start, end + 1) };
}

const FETCH_TIMEOUT_MS = 5_000;
const FETCH_MAX_BYTES = 64 * 1024 * 1024;

/**
 * What a vendor finds when it downloads a reference video a client gave by URL: undefined when the
 * URL serves an MP4, MOV or WebM, else the problem in words (unreachable, refused, not a video).
 * Simulators call it when `settings.fetchReferenceMedia` is on, as the real vendors fetch.
 */
export async function referenceVideoProblem(url: unknown): Promise<string | undefined> {
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) return 'the video URL must be http(s)';
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch {
    return 'the video could not be downloaded';
  }
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => undefined);
    return `downloading the video answered ${res.status}`;
  }
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > FETCH_MAX_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    return 'the video is too large';
  }
  let bytes: Buffer;
  try {
    bytes = Buffer.from(await res.arrayBuffer());
  } catch {
    return 'the video download broke off';
  }
  return sniffVideo(bytes) ? undefined : 'the downloaded file is not a video';
}
