import type { AuthContext } from '../../auth/types.js';
import { errors, isGatewayError } from '../../core/errors.js';
import { isObject, type JsonObject } from '../../core/json.js';
import type { FileRecord } from '../../store/file-types.js';
import type { VideoDeps } from '../deps.js';
import { sniffVideo } from '../../core/sniff.js';
import type { InlineMedia } from '../types.js';
import { checkUpload } from '../uploads.js';
import { checkVideoUpload } from '../video-upload.js';
import { toSpecBody } from './request.js';

export interface PreparedCreate {
  spec: JsonObject;
  /** Blob names the job owns (removed when it settles plus retention, or at once if no job takes them). */
  uploads: string[];
  prefetched?: Map<string, InlineMedia>;
}

/**
 * `input_reference: {file_id}`: the stored file a create names, a file uploaded through the Files
 * API standing for an uploaded file (undefined when the create names none). Only its record is
 * read: a file over the limit of its kind (an image's, or a video's, by the type its first bytes
 * named at upload, as prepareUpload tells them) is 413 from its recorded size, so a create never
 * reads a file it would refuse.
 */
export async function referencedFile(deps: VideoDeps, auth: AuthContext, fields: JsonObject): Promise<FileRecord | undefined> {
  const ref = fields.input_reference;
  if (!isObject(ref) || ref.file_id === undefined) return undefined;
  if (ref.image_url !== undefined) throw errors.invalidRequest("'input_reference' takes either file_id or image_url, not both.", 'input_reference');
  const rec = await asReferenceError(() => deps.files.record(auth.account.id, ref.file_id));
  const limit = rec.mime.startsWith('video/') ? deps.settings.uploadVideoMaxBytes : deps.settings.uploadMaxBytes;
  if (rec.bytes > limit) throw errors.uploadTooLarge(limit);
  return rec;
}

/**
 * A referenced file's bytes, copied into the job's own upload by prepareUpload, so deleting the
 * file later never breaks the job. Read only once `hold` has taken their size from the budget of
 * bytes in flight (503 `overloaded` when they do not fit): files are read whole, and many creates
 * at once would otherwise hold gigabytes.
 */
export async function readReferencedFile(deps: VideoDeps, rec: FileRecord, hold: (bytes: number) => boolean): Promise<Buffer> {
  if (!hold(rec.bytes)) throw errors.overloaded();
  return asReferenceError(() => deps.files.bytes(rec));
}

/** A file missing here is the client's mistake in this request, not a missing route resource. */
async function asReferenceError<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (isGatewayError(e) && e.status === 404) throw errors.invalidRequest(e.message, 'input_reference.file_id');
    throw e;
  }
}

/**
 * The memory the base64 copy of an uploaded file takes (prepareUpload makes it for the vendors
 * that take media inline): 4 characters per 3 bytes, held for as long as the create's upstream call
 * runs, so it is taken from the budget of bytes in flight as the file itself is.
 */
export function base64CopyBytes(file: Buffer): number {
  return Math.ceil(file.length / 3) * 4;
}

/**
 * The spec body for an OpenAI create with an uploaded `input_reference`: an image becomes the
 * first frame, a video (MP4, MOV, WebM) a video input for the models that take one (400
 * unsupported_input_reference elsewhere). The file is checked from its bytes, stored, and given
 * to the vendor as a signed link, or inline (its bytes, prefetched) where the vendor wants them.
 */
export async function prepareUpload(deps: VideoDeps, auth: AuthContext, model: string, fields: JsonObject, file: Buffer): Promise<PreparedCreate> {
  const { settings } = deps;
  const caps = deps.capabilities(model);
  const video = sniffVideo(file);
  let checked: { mime: string; ext: string };
  if (video) {
    checked = checkVideoUpload(file, 'input_reference', { maxBytes: settings.uploadVideoMaxBytes, maxSeconds: settings.uploadVideoMaxSeconds });
    if (!caps?.video_reference)
      throw errors.invalidRequest(`${model} does not take a video as input_reference; send an image, or use a model that takes video input.`, 'input_reference', 'unsupported_input_reference');
  } else {
    if (file.length > settings.uploadMaxBytes) throw errors.uploadTooLarge(settings.uploadMaxBytes);
    checked = checkUpload(file, 'input_reference');
    if (caps && !caps.first_frame)
      throw errors.invalidRequest(`${model} does not take an input_reference image.`, 'input_reference', 'unsupported_input_reference');
  }
  const name = await deps.uploads.store(auth.account.id, file, checked);
  const url = deps.uploads.url(name, deps.clock.now());
  // Vendors that take the media inline (Veo, Azure's multipart) get these bytes, never a fetch of our own link.
  const prefetched = new Map<string, InlineMedia>([[url, { base64: file.toString('base64'), mimeType: checked.mime }]]);
  try {
    return { spec: toSpecBody(fields, { url, kind: video ? 'video' : 'image' }), uploads: [name], prefetched };
  } catch (e) {
    await deps.blobs.delete(name).catch(() => undefined);
    throw e;
  }
}
