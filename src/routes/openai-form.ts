import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import { foldFormFields, type FormValue } from '../video/openai/request.js';
import { readFilePart } from './multipart-file.js';
import { fieldParam, formError, formParts, isMultipartForm } from './multipart-form.js';

export const MAX_FORM_FIELDS = 64;
export const MAX_FIELD_BYTES = 256 * 1024;

export interface ParsedForm {
  fields: JsonObject;
  file?: Buffer;
}

/**
 * A request's fields and its one file (in `fileField`, at most `maxBytes`), from JSON or from the
 * multipart form the official SDKs send (nested fields such as `video[id]` folded back into objects).
 * A form is taken only whole: one cut short before its closing boundary is refused (multipart-form.ts).
 */
export async function readForm(req: FastifyRequest, reply: FastifyReply, maxBytes: number, fileField: string): Promise<ParsedForm> {
  if (!isMultipartForm(req)) {
    if (!isObject(req.body)) throw errors.invalidRequest('The request body must be a JSON object or a multipart form.', undefined, 'invalid_body');
    return { fields: req.body };
  }
  const fields: FormValue[] = [];
  let file: Buffer | undefined;
  try {
    for await (const part of formParts(req, { fileField, fileSize: maxBytes, fields: MAX_FORM_FIELDS, fieldSize: MAX_FIELD_BYTES })) {
      if (part.type === 'file') {
        if (part.fieldname !== fileField) {
          part.file.resume();
          throw errors.invalidRequest(`Unexpected file field '${part.fieldname.slice(0, 100)}'; the file goes in '${fileField}'.`, fieldParam(part.fieldname));
        }
        // Bounded by the file size limit, and with every other upload by the body budget.
        file = await readFilePart(part, reply);
      } else {
        if (part.valueTruncated) throw errors.invalidRequest(`Form field '${part.fieldname.slice(0, 100)}' is too long.`, fieldParam(part.fieldname));
        // Fields are held too (up to MAX_FORM_FIELDS of MAX_FIELD_BYTES each): they count like the file.
        if (!reply.takeUploadBytes(part.fieldname.length + part.value.length)) throw errors.overloaded();
        // A field declared as JSON is checked in the fold, after the limits a JSON body has.
        fields.push({ name: part.fieldname, text: part.value, declaredJson: part.declaredJson });
      }
    }
  } catch (e) {
    throw formError(e);
  }
  return { fields: foldFormFields(fields), file };
}
