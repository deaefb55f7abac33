import type { SimReply, SimRequest, SimServer } from '../../../sim/framework.js';
import { sampleMp4, syntheticVideo } from '../../../sim/media.js';

/**
 * HTTP pieces shared by the OpenAI and Azure Sora simulators: ranged video downloads as object
 * storage serves them, and create bodies that arrive either as JSON or as multipart/form-data.
 */

/** A single byte range, "unsatisfiable" (416) or undefined (serve everything, as RFC 9110 allows). */
export function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    return suffix === 0 ? 'unsatisfiable' : [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? undefined : Number(m[2]);
  if (end !== undefined && end < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return [start, Math.min(end ?? size - 1, size - 1)];
}

/** The MP4 fixture, or `settings.videoBytes` bytes of synthetic video, honouring Range. */
export function videoReply(req: SimRequest, sim: SimServer): SimReply {
  const synthetic = typeof sim.settings.videoBytes === 'number' ? (sim.settings.videoBytes as number) : undefined;
  const size = synthetic ?? sampleMp4().length;
  const base = { 'content-type': 'video/mp4', 'accept-ranges': 'bytes' };
  const range = parseRange(req.headers['range'], size);
  if (range === 'unsatisfiable') return { status: 416, headers: { ...base, 'content-range': `bytes */${size}` }, body: '' };
  const [start, end] = range ?? [0, size - 1];
  const headers: Record<string, string> = { ...base, 'content-length': String(end - start + 1) };
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`;
  const body = synthetic !== undefined ? syntheticVideo(synthetic, start, end) : sampleMp4().subarray(start, end + 1);
  return { status: range ? 206 : 200, headers, body };
}

export interface SimFile {
  field: string;
  filename: string;
  type: string;
  data: Buffer;
}

/** A create body as the vendor received it: JSON fields, or form fields (all strings) plus files. */
export interface SimBody {
  multipart: boolean;
  fields: Record<string, any>;
  files: SimFile[];
}

export async function readBody(req: SimRequest): Promise<SimBody | undefined> {
  const ctype = req.headers['content-type'] ?? '';
  if (ctype.startsWith('multipart/form-data')) {
    let form: FormData;
    try {
      form = await new Response(new Uint8Array(req.raw), { headers: { 'content-type': ctype } }).formData();
    } catch {
      return undefined;
    }
    const fields: Record<string, string> = {};
    const files: SimFile[] = [];
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string') fields[name] = value;
      else files.push({ field: name, filename: value.name, type: value.type, data: Buffer.from(await value.arrayBuffer()) });
    }
    return { multipart: true, fields, files };
  }
  if (req.json === undefined || typeof req.json !== 'object' || Array.isArray(req.json) || req.json === null) return undefined;
  return { multipart: false, fields: req.json as Record<string, any>, files: [] };
}

/** A random lowercase id body in the style both vendors use. */
export function simId(length = 26): string {
  const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(Math.random() * alphabet.length)];
  return out;
}
