import { randomBytes } from 'node:crypto';
import type { JsonObject } from '../core/json.js';
import { restoreNumbers, restoreString } from '../core/lossless-json.js';

export interface FilePart {
  field: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

/** Header values come from client input; quotes and line breaks are escaped the way browsers do. */
function headerSafe(s: string): string {
  return s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/**
 * Encodes a request body as multipart/form-data, the form in which vendors take uploaded files
 * (Azure's jobs API its images and videos, OpenAI's video edits and characters their videos). Form
 * fields are strings: numbers and booleans are written as text and nested values as JSON text
 * (Azure's inpaint_items must travel as a JSON string); nulls are left out because a form has no
 * way to say null.
 */
export function encodeMultipart(
  fields: JsonObject,
  files: FilePart[],
  boundary = `----gateway-${randomBytes(16).toString('hex')}`,
): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    if (value === null) continue;
    // Strings as the client sent them, a vendor's number as it wrote it (core/lossless-json.ts).
    const text = typeof value === 'string' ? restoreString(value) : typeof value === 'object' ? restoreNumbers(JSON.stringify(value)) : String(value);
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${headerSafe(restoreString(name))}"\r\n\r\n${text}\r\n`));
  }
  for (const f of files) {
    // A part's name and file name may be a client's (Azure's inpaint file_name): sent as it was sent.
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${headerSafe(restoreString(f.field))}"; filename="${headerSafe(restoreString(f.filename))}"\r\n` +
          `Content-Type: ${f.contentType.replace(/[\r\n]/g, '')}\r\n\r\n`,
      ),
      f.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
