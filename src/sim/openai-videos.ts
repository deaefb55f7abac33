import type { SimReply, SimRequest, SimServer } from './framework.js';
import { serveVideo } from './media.js';

/**
 * HTTP pieces shared by the OpenAI and Azure Sora simulators: ranged video downloads as object
 * storage serves them, and create bodies that arrive either as JSON or as multipart/form-data.
 */

/** A single byte range, "unsatisfiable" (416) or undefined (serve everything, as RFC 9110 allows). */
/** The MP4 fixture, or `settings.videoBytes` bytes of synthetic video, honouring Range. */
export function videoReply(req: SimRequest, sim: SimServer): SimReply {
  return serveVideo(req, sim.settings.videoBytes);
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
