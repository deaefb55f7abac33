import { crc32, deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { nasty } from './values.js';

/**
 * multipart/form-data bodies as the OpenAI SDKs send them (`/v1/videos` with an `input_reference`
 * file, `/v1/files` with `file` and `purpose`), and broken ones: files of every sniffed kind and none,
 * bracketed field names (`a[b]`, `a[]`, too deep), duplicates, a file in the wrong field, two files,
 * a wrong or missing closing boundary.
 */
export interface Multipart {
  contentType: string;
  body: Buffer;
}

type Part = { name: string; value: string } | { name: string; filename: string; type: string; bytes: Buffer };

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

/** A PNG header claiming width x height (only the header: a sniffer reads this much, the gateway refuses it as cut short). */
const pngHead = (w: number, h: number) => Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), u32(w), u32(h), Buffer.from('0806000000', 'hex')]);
const chunk = (type: string, data: Buffer) => {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  return Buffer.concat([u32(data.length), body, u32(crc32(body))]);
};
/** A PNG whose container is whole (IHDR, IDAT, IEND; the pixel data is not a real picture, which nothing decodes). */
const pngWhole = (w: number, h: number) =>
  Buffer.concat([pngHead(w, h).subarray(0, 8), chunk('IHDR', pngHead(w, h).subarray(16)), chunk('IDAT', deflateSync(Buffer.alloc(64))), chunk('IEND', Buffer.alloc(0))]);
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
/** An MP4 whose `ftyp` and `mvhd` boxes are all there is (duration read from mvhd). */
function mp4(durationSeconds: number): Buffer {
  const ftyp = Buffer.concat([u32(20), Buffer.from('ftypisom'), u32(0), Buffer.from('isom')]);
  const mvhdBody = Buffer.concat([u32(0), u32(0), u32(0), u32(1000), u32(Math.max(0, Math.round(durationSeconds * 1000)))]);
  const mvhd = Buffer.concat([u32(8 + mvhdBody.length), Buffer.from('mvhd'), mvhdBody]);
  const moov = Buffer.concat([u32(8 + mvhd.length), Buffer.from('moov'), mvhd]);
  return Buffer.concat([ftyp, moov]);
}

/** Files a model takes: an image of a usual size, a short MP4. */
const goodFile: fc.Arbitrary<{ bytes: Buffer; type: string }> = fc.oneof(
  fc.constantFrom([1280, 720], [720, 1280], [1024, 1024]).map(([w, h]) => ({ bytes: pngWhole(w!, h!), type: 'image/png' })),
  fc.constantFrom(4, 8).map((s) => ({ bytes: mp4(s), type: 'video/mp4' })),
);

export const fileBytes: fc.Arbitrary<{ bytes: Buffer; type: string }> = fc.oneof(
  fc.constant({ bytes: PNG_1PX, type: 'image/png' }),
  fc.tuple(fc.constantFrom(0, 1, 720, 1280, 20_000, 2 ** 31, 2 ** 32 - 1), fc.constantFrom(0, 1, 720, 1280, 20_000, 2 ** 32 - 1)).map(([w, h]) => ({ bytes: pngHead(w, h), type: 'image/png' })),
  fc.constant({ bytes: Buffer.from('ffd8ffe000104a46494600010100000100010000ffd9', 'hex'), type: 'image/jpeg' }),
  fc.constant({ bytes: Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1'), type: 'image/gif' }),
  fc.constant({ bytes: Buffer.from('RIFF\x1a\x00\x00\x00WEBPVP8 ', 'latin1'), type: 'image/webp' }),
  fc.constantFrom(0, 1, 4, 8, 20, 3600, 1e9, -1).map((s) => ({ bytes: mp4(s), type: 'video/mp4' })),
  fc.constant({ bytes: Buffer.from('1a45dfa3', 'hex'), type: 'video/webm' }),
  fc.constant({ bytes: Buffer.alloc(0), type: 'application/octet-stream' }),
  fc.uint8Array({ maxLength: 300 }).map((a) => ({ bytes: Buffer.from(a), type: 'application/octet-stream' })),
  fc.constant({ bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), type: 'image/svg+xml' }),
);

/** Form fields from a JSON body the way the SDKs encode nested objects and arrays. */
export function formFields(body: Record<string, unknown>, prefix = ''): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(body)) {
    const name = prefix ? `${prefix}[${k}]` : k;
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) out.push(...(x && typeof x === 'object' ? formFields(x as Record<string, unknown>, `${name}[]`) : [[`${name}[]`, String(x)] as [string, string]]));
    else if (v && typeof v === 'object') out.push(...formFields(v as Record<string, unknown>, name));
    else out.push([name, String(v)]);
  }
  return out;
}

function encode(parts: Part[], boundary: string, close: string): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const head =
      'filename' in p
        ? `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.type}\r\n\r\n`
        : `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n`;
    chunks.push(Buffer.from(head, 'utf8'), 'filename' in p ? p.bytes : Buffer.from(p.value, 'utf8'), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(close.replace('B', boundary)));
  return Buffer.concat(chunks);
}

const fieldName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('model', 'prompt', 'seconds', 'size', 'purpose', 'input_reference[image_url]', 'input_reference[file_id]', 'expires_after[anchor]', 'expires_after[seconds]') },
  { weight: 2, arbitrary: fc.constantFrom('a[]', 'a[b][c][d][e]', 'a[][b]', 'a[b][]', '__proto__', 'a[__proto__]', 'constructor[prototype]', '[x]', 'a]', 'a[', '', 'seed', 'parameters[fps]') },
  { weight: 1, arbitrary: nasty.map((s) => s.replace(/["\r\n]/g, '')) },
);

/**
 * A form: `fields` (from a realistic body) with a file in `fileField`, then mutations: extra or
 * duplicated fields, a second file, a file under another name, a wrong closing boundary.
 */
export function multipartBody(
  fields: fc.Arbitrary<Record<string, unknown>>,
  fileField: string,
  /** Form fields of the route's own (name, value), sent as they come. */
  extraFields: fc.Arbitrary<[string, string][]> = fc.constant([]),
  /** Without: a well-formed form (the file where it belongs, no stray fields, the right closing boundary). */
  hostile = true,
): fc.Arbitrary<Multipart> {
  const broken = <T>(a: fc.Arbitrary<T>, fine: T) => (hostile ? a : fc.constant(fine));
  return fc
    .record({
      fields,
      extra: extraFields,
      file: hostile ? fc.option(fc.oneof(goodFile, fileBytes), { freq: 4, nil: undefined }) : goodFile,
      fileName: broken(fc.oneof({ weight: 6, arbitrary: fc.constant(fileField) }, { weight: 1, arbitrary: fieldName }), fileField),
      filename: fc.oneof(fc.constantFrom('a.png', 'clip.mp4', 'x', ''), nasty.map((s) => s.replace(/["\r\n]/g, ''))),
      noise: broken(fc.array(fc.tuple(fieldName, fc.oneof(fc.constantFrom('1', '{"a":1}', '[1,2]', 'true', 'null', '1e309', ''), nasty)), { maxLength: 3 }), []),
      twoFiles: broken(fc.nat({ max: 9 }).map((n) => n === 0), false),
      boundary: fc.constantFrom('fuzzboundary', 'x', '----WebKitFormBoundary7MA4YWxkTrZu0gW', 'a'.repeat(70), '"quoted"'),
      close: broken(fc.constantFrom('--B--\r\n', '--B--\r\n', '--B--\r\n', '--B--', '--B\r\n', '', '--other--\r\n'), '--B--\r\n'),
    })
    .map(({ fields: f, extra, file, fileName, filename, noise, twoFiles, boundary, close }) => {
      const parts: Part[] = [...formFields(f), ...extra, ...noise].map(([name, value]) => ({ name, value }));
      if (file) parts.push({ name: fileName, filename, type: file.type, bytes: file.bytes });
      if (file && twoFiles) parts.push({ name: fileField, filename, type: file.type, bytes: file.bytes });
      const b = boundary.replace(/"/g, '');
      return { contentType: `multipart/form-data; boundary=${boundary}`, body: encode(parts, b, close) };
    });
}
