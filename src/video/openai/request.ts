import { errors } from '../../core/errors.js';
import { FORBIDDEN_KEYS, isObject, type Json, type JsonObject } from '../../core/json.js';

/** Fields of OpenAI's create that are strings by definition: never read as numbers or JSON. */
const STRING_FIELDS = new Set(['model', 'prompt', 'seconds', 'size']);
/**
 * The role an uploaded video input_reference carries among the input_references: the video itself
 * is the input (Veo extends it, Azure inpaints from it), not soft guidance that a vendor may ignore.
 */
export const SOURCE_VIDEO_ROLE = 'source_video';
/** OpenAI's default when `model` is left out. */
export const OPENAI_DEFAULT_MODEL = 'sora-2';
const MAX_FIELDS = 64;

/**
 * Multipart fields as the official SDKs encode them (`input_reference[image_url]` for a nested
 * object, `a[]` for an array) folded back into JSON. Every value arrives as text: standard string
 * fields stay text, and other values that read as JSON numbers, booleans, objects or arrays are
 * parsed (`seed=42` is the number 42), so native parameters reach the vendor with their types.
 */
export function foldFormFields(pairs: ReadonlyArray<[string, string]>): JsonObject {
  if (pairs.length > MAX_FIELDS) throw errors.invalidRequest(`At most ${MAX_FIELDS} form fields are accepted.`, undefined, 'too_many_fields');
  const out: JsonObject = Object.create(null);
  for (const [rawKey, text] of pairs) {
    const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(rawKey);
    if (!m) throw errors.invalidRequest(`Malformed form field name '${rawKey.slice(0, 100)}'.`, undefined, 'invalid_body');
    const path = [m[1]!, ...[...m[2]!.matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1]!)];
    if (path.some((p) => FORBIDDEN_KEYS.has(p)))
      throw errors.invalidRequest(`Form field '${rawKey.slice(0, 100)}' uses a forbidden key.`, rawKey.slice(0, 100), 'forbidden_key');
    if (path.length > 4) throw errors.invalidRequest(`Form field '${rawKey.slice(0, 100)}' is nested too deeply.`, rawKey, 'invalid_body');
    const value = STRING_FIELDS.has(path[0]!) && path.length === 1 ? text : typed(text);
    setPath(out, path, value, rawKey);
  }
  return { ...out };
}

function typed(text: string): Json {
  if (!/^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null|[[{].*)$/s.test(text)) return text;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}

function setPath(root: JsonObject, path: string[], value: Json, rawKey: string): void {
  let node: JsonObject | Json[] = root;
  for (let i = 0; i < path.length; i++) {
    const key = path[i]!;
    const last = i === path.length - 1;
    const nextIsArray = !last && path[i + 1] === '';
    if (Array.isArray(node)) {
      if (key !== '') throw errors.invalidRequest(`Form field '${rawKey}' mixes list and object forms.`, rawKey, 'invalid_body');
      if (last) node.push(value);
      else {
        const child: JsonObject | Json[] = nextIsArray ? [] : {};
        node.push(child);
        node = child;
      }
      continue;
    }
    if (key === '') throw errors.invalidRequest(`Form field '${rawKey}' mixes list and object forms.`, rawKey, 'invalid_body');
    if (last) {
      if (node[key] !== undefined) throw errors.invalidRequest(`Form field '${rawKey}' is sent twice.`, rawKey, 'invalid_body');
      node[key] = value;
      continue;
    }
    const existing: Json | undefined = node[key];
    if (existing === undefined) {
      const child: JsonObject | Json[] = nextIsArray ? [] : {};
      node[key] = child;
      node = child;
    } else if (Array.isArray(existing) === nextIsArray && typeof existing === 'object' && existing !== null) {
      node = existing as JsonObject | Json[];
    } else throw errors.invalidRequest(`Form field '${rawKey}' conflicts with another field.`, rawKey, 'invalid_body');
  }
}

/**
 * An OpenAI Videos create, translated into the spec's create body: `seconds` and `size` are the
 * standard fields already (strings are accepted); `input_reference` (an uploaded image, whose
 * signed gateway link is `upload.url`, or `{image_url}`, or a URL string) becomes the first frame,
 * and an uploaded video becomes an `input_references` item of type video.
 * Every other field stays native and follows spec 2.3.
 */
export function toSpecBody(fields: JsonObject, upload: { url: string; kind: 'image' | 'video' } | undefined): JsonObject {
  const { input_reference: ref, ...rest } = fields;
  const body: JsonObject = { ...rest };
  if (body.model === undefined) body.model = OPENAI_DEFAULT_MODEL;
  let firstFrame: string | undefined = upload?.kind === 'image' ? upload.url : undefined;
  if (ref !== undefined && ref !== null) {
    if (upload) throw errors.invalidRequest("Send 'input_reference' once: as a file or as a reference, not both.", 'input_reference');
    if (typeof ref === 'string') firstFrame = ref;
    else if (isObject(ref) && typeof ref.image_url === 'string' && ref.file_id === undefined) firstFrame = ref.image_url;
    else throw errors.invalidRequest("'input_reference' must be an uploaded image, {image_url}, or an image URL.", 'input_reference');
  }
  if (upload?.kind === 'video') {
    // A video is input the vendor reads as its kind of video input (see each vendor's adapter).
    if (body.input_references !== undefined)
      throw errors.invalidRequest("Send either a video 'input_reference' or 'input_references', not both.", 'input_reference');
    body.input_references = [{ type: 'video', url: upload.url, role: SOURCE_VIDEO_ROLE }];
  }
  if (firstFrame !== undefined) {
    if (body.frame_images !== undefined)
      throw errors.invalidRequest("Send either 'input_reference' or 'frame_images', not both.", 'input_reference');
    body.frame_images = [{ image_url: firstFrame, frame_type: 'first_frame' }];
  }
  return body;
}
