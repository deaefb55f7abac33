import { Busboy, type BusboyFileStream, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors, isGatewayError, type GatewayError } from '../core/errors.js';
import { FORBIDDEN_KEYS } from '../core/json.js';
import { escapeMarkerLookalike } from '../core/lossless-json.js';

/** A route's bounds on its forms; every form carries at most one file, in `fileField`. */
export interface FormLimits {
  /** The file's field, named in the errors about the file. */
  fileField: string;
  fileSize: number;
  fields: number;
  fieldSize: number;
}

export interface FormField {
  type: 'field';
  fieldname: string;
  value: string;
  /** The value was cut at the field size limit. */
  valueTruncated: boolean;
  /**
   * The part's Content-Type is JSON. Whoever reads the value checks that it is JSON, after holding
   * it to whatever limits apply before JSON is parsed (a form's fields share one budget, so that is
   * the route's to know, not this reader's).
   */
  declaredJson: boolean;
}

export interface FormFile {
  type: 'file';
  fieldname: string;
  filename: string | undefined;
  mimetype: string;
  /** Must be read to its end (or resumed) before the next part can arrive. */
  file: BusboyFileStream;
}

export type FormPart = FormField | FormFile;

const forms = new WeakSet<FastifyRequest>();

/**
 * Takes multipart/form-data bodies in `scope` without reading them: a route reads its form from the
 * raw request with `formParts`, holding only what it keeps.
 */
export function acceptMultipartForms(scope: FastifyInstance): void {
  scope.addContentTypeParser('multipart/form-data', (req, _payload, done) => {
    forms.add(req);
    done(null);
  });
}

export function isMultipartForm(req: FastifyRequest): boolean {
  return forms.has(req);
}

/** What reading a form failed on, for a route's catch: anything that is not already a refusal is an unreadable form. */
export function formError(e: unknown): unknown {
  return isGatewayError(e) ? e : errors.unreadableForm();
}

const ignore = (): void => undefined;

/**
 * The parts of the request's form, in order. The iteration ends only when the parser has read the
 * closing boundary and handed over every part: a body that ends before it (cut short, though its
 * Content-Length is right), a malformed part, or a client gone mid-body throws 400 `invalid_body`
 * instead of ending early, so a form is never taken without its last fields or with a file cut short.
 * A limit reached throws its own refusal. A file part's stream fails with the same error.
 * (The parser is driven here rather than through @fastify/multipart 9, whose `parts()` ends quietly
 * on the parser's "Unexpected end of multipart data" and on the request's 'close' alone.)
 */
export async function* formParts(req: FastifyRequest, limits: FormLimits): AsyncGenerator<FormPart> {
  const raw = req.raw;
  let parser: BusboyInstance;
  try {
    parser = Busboy({
      headers: raw.headers as BusboyHeaders,
      limits: { fileSize: limits.fileSize, files: 1, fields: limits.fields, parts: limits.fields + 1, fieldSize: limits.fieldSize },
    });
  } catch {
    // No boundary, or not a form type the parser reads. The body is discarded, as Node does for a body nobody reads.
    raw.resume();
    throw errors.unreadableForm();
  }

  const ready: FormPart[] = [];
  let failure: GatewayError | undefined;
  let finished = false;
  let current: BusboyFileStream | undefined;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const fail = (e: GatewayError): void => {
    if (failure || finished) return;
    failure = e;
    // A consumer reading the file learns it from the stream it reads.
    current?.destroy(e);
    notify();
  };
  const tooManyFields = (): void => fail(errors.invalidRequest(`At most ${limits.fields} form fields are accepted.`, undefined, 'too_many_fields'));
  const forbiddenKey = (): void => fail(errors.invalidRequest('A form field name is a forbidden key.', undefined, 'forbidden_key'));
  // The names a JSON body refuses (`__proto__`, `constructor`, `prototype`), no more: a field named
  // `toString` or `hasOwnProperty` is an ordinary name there, and so here. Whoever keeps fields by
  // name keeps them where such a name finds nothing inherited (a null-prototype object, a Map).

  parser.on('field', (name: string | undefined, value: string, _nameCut: boolean, valueTruncated: boolean, _enc: string, mimetype: string) => {
    if (failure) return;
    if (name === undefined) return fail(errors.unreadableForm());
    if (FORBIDDEN_KEYS.has(name)) return forbiddenKey();
    ready.push({ type: 'field', fieldname: name, value, valueTruncated, declaredJson: /^application\/json/i.test(mimetype) });
    notify();
  });
  parser.on('file', (name: string | undefined, file: BusboyFileStream, filename: string | undefined, _enc: string, mimetype: string) => {
    // The parser emits a part's own error on its stream when the body ends inside it: without a
    // listener that would be an uncaught error. The form's failure comes from the parser's 'error'.
    file.on('error', ignore);
    if (failure || name === undefined || FORBIDDEN_KEYS.has(name)) {
      file.resume();
      if (name === undefined) fail(errors.unreadableForm());
      else forbiddenKey();
      return;
    }
    current = file;
    file.once('end', () => {
      if (current === file) current = undefined;
    });
    file.once('limit', () => fail(errors.uploadTooLarge(limits.fileSize, limits.fileField)));
    ready.push({ type: 'file', fieldname: name, filename, mimetype, file });
    notify();
  });
  parser.on('filesLimit', () => fail(errors.invalidRequest(`Send at most one file (${limits.fileField}).`, limits.fileField, 'too_many_files')));
  parser.on('fieldsLimit', tooManyFields);
  parser.on('partsLimit', tooManyFields);
  // Among them "Unexpected end of multipart data": the body ended before the closing boundary.
  parser.on('error', () => fail(errors.unreadableForm()));
  // Emitted after the closing boundary, once every part has ended (after an error too, which came first).
  parser.on('finish', () => {
    if (failure) return;
    finished = true;
    notify();
  });
  // A client gone mid-body: the parser would wait for the rest forever.
  const onGone = (): void => {
    if (!raw.complete) fail(errors.unreadableForm());
  };
  raw.on('close', onGone);
  raw.on('error', onGone);
  raw.pipe(parser);

  try {
    for (;;) {
      if (failure) throw failure;
      const part = ready.shift();
      if (part) yield part;
      else if (finished) return;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    raw.off('close', onGone);
    raw.off('error', onGone);
    if (!finished) {
      // Refused, or left by the route: nothing more is parsed or held, and the rest of the body is
      // read and dropped so the connection can take the next request.
      raw.unpipe(parser);
      current?.destroy();
      raw.resume();
    }
  }
}

/**
 * A field declared as JSON that is not is refused. For a route whose fields are short (1 KiB on
 * `POST /v1/files`), whose parse costs nothing; the video create holds its fields to the JSON body
 * limits first (video/openai/request.ts).
 */
export function refuseInvalidDeclaredJson(field: FormField): void {
  if (!field.declaredJson) return;
  try {
    JSON.parse(field.value);
  } catch {
    throw errors.invalidJson('A form field declared as JSON is not valid JSON.');
  }
}

/** A client's form field name as an error's param: cut short, never taken for a number marker (core/lossless-json.ts). */
export function fieldParam(name: string): string {
  return escapeMarkerLookalike(name.slice(0, 100));
}
