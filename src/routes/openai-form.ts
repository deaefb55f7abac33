import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors, isGatewayError } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import { foldFormFields } from '../video/openai/request.js';
import { readFilePart } from './multipart-file.js';

export const MAX_FORM_FIELDS = 64;
export const MAX_FIELD_BYTES = 256 * 1024;

/** The @fastify/multipart limits of the OpenAI Videos routes: one file of at most `maxBytes`. */
export function formLimits(maxBytes: number) {
  return { fileSize: maxBytes, files: 1, fields: MAX_FORM_FIELDS, parts: MAX_FORM_FIELDS + 1, fieldSize: MAX_FIELD_BYTES };
}

export interface ParsedForm {
  fields: JsonObject;
  file?: Buffer;
}

/** Multipart errors of @fastify/multipart, in the spec's error shape. */
function multipartError(e: unknown, maxBytes: number, fileField: string): unknown {
  const code = (e as { code?: string })?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return errors.uploadTooLarge(maxBytes, fileField);
  if (code === 'FST_FILES_LIMIT') return errors.invalidRequest(`Send at most one file (${fileField}).`, fileField, 'too_many_files');
  if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT')
    return errors.invalidRequest(`At most ${MAX_FORM_FIELDS} form fields are accepted.`, undefined, 'too_many_fields');
  if (code === 'FST_PROTO_VIOLATION') return errors.invalidRequest('A form field name is a forbidden key.', undefined, 'forbidden_key');
  if (code === 'FST_INVALID_JSON_FIELD_ERROR') return errors.invalidJson('A form field declared as JSON is not valid JSON.');
  if (isGatewayError(e)) return e;
  // Anything else comes from reading the form itself (no boundary, a malformed part header): the
  // client's mistake, never a 500.
  return errors.unreadableForm();
}

/**
 * A request's fields and its one file (in `fileField`), from JSON or from the multipart form the
 * official SDKs send (nested fields such as `video[id]` folded back into objects).
 */
export async function readForm(req: FastifyRequest, reply: FastifyReply, maxBytes: number, fileField: string): Promise<ParsedForm> {
  if (!req.isMultipart()) {
    if (!isObject(req.body)) throw errors.invalidRequest('The request body must be a JSON object or a multipart form.', undefined, 'invalid_body');
    return { fields: req.body };
  }
  const pairs: [string, string][] = [];
  let file: Buffer | undefined;
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== fileField) {
          part.file.resume();
          throw errors.invalidRequest(`Unexpected file field '${part.fieldname.slice(0, 100)}'; the file goes in '${fileField}'.`, part.fieldname.slice(0, 100));
        }
        // Bounded by the plugin's fileSize limit, and with every other upload by the body budget.
        file = await readFilePart(part, reply);
      } else {
        if (part.valueTruncated || part.fieldnameTruncated)
          throw errors.invalidRequest(`Form field '${part.fieldname.slice(0, 100)}' is too long.`, part.fieldname.slice(0, 100));
        const v = part.value;
        const value = typeof v === 'string' ? v : JSON.stringify(v);
        // Fields are held too (up to MAX_FORM_FIELDS of MAX_FIELD_BYTES each): they count like the file.
        if (!reply.takeUploadBytes(part.fieldname.length + value.length)) throw errors.overloaded();
        pairs.push([part.fieldname, value]);
      }
    }
  } catch (e) {
    throw multipartError(e, maxBytes, fileField);
  }
  return { fields: foldFormFields(pairs), file };
}
