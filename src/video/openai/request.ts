import { errors } from '../../core/errors.js';
import { FORBIDDEN_KEYS, isObject, type Json, type JsonObject } from '../../core/json.js';
import { escapeMarkerLookalike, escapeMarkerLookalikes } from '../../core/lossless-json.js';
import { MAX_JSON_DEPTH, MAX_OBJECT_MEMBERS, scanJsonWithin, type MemberBudget } from '../../http/json-depth.js';

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

/** One form field as read: its name, its text, and whether its part declared the text JSON. */
export interface FormValue {
  name: string;
  text: string;
  declaredJson?: boolean;
}

/**
 * Multipart fields as the official SDKs encode them (`input_reference[image_url]` for a nested
 * object, `a[]` for an array) folded back into JSON. Every value arrives as text: standard string
 * fields stay text, and other values that read as JSON numbers, booleans, objects or arrays are
 * parsed (`seed=42` is the number 42), so native parameters reach the vendor with their types.
 * A field declared as JSON (its part's Content-Type) must be JSON.
 */
export function foldFormFields(fields: ReadonlyArray<FormValue>): JsonObject {
  if (fields.length > MAX_FIELDS) throw errors.invalidRequest(`At most ${MAX_FIELDS} form fields are accepted.`, undefined, 'too_many_fields');
  const out: JsonObject = Object.create(null);
  // The fields together are one body: 64 fields may not hold 64 bodies' worth of members.
  const budget: MemberBudget = { left: MAX_OBJECT_MEMBERS };
  for (const { name: rawKey, text, declaredJson } of fields) {
    const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(rawKey);
    if (!m) throw errors.invalidRequest(`Malformed form field name '${rawKey.slice(0, 100)}'.`, undefined, 'invalid_body');
    const path = [m[1]!, ...[...m[2]!.matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1]!)];
    if (path.some((p) => FORBIDDEN_KEYS.has(p)))
      throw errors.invalidRequest(`Form field '${rawKey.slice(0, 100)}' uses a forbidden key.`, param(rawKey), 'forbidden_key');
    if (path.length > 4) throw errors.invalidRequest(`Form field '${rawKey.slice(0, 100)}' is nested too deeply.`, param(rawKey), 'invalid_body');
    const keepText = STRING_FIELDS.has(path[0]!) && path.length === 1;
    const value = fieldValue(text, { rawKey, levels: path.length, keepText, declaredJson: declaredJson === true }, budget);
    // Names and text as a JSON body's are kept: none taken for a number marker (core/lossless-json.ts).
    setPath(out, path.map(escapeMarkerLookalike), value, rawKey);
  }
  return { ...out };
}

/** Text that `fieldValue` parses: JSON numbers, booleans, null, and what opens an array or object. */
const TYPED = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null|[[{].*)$/s;

/**
 * A field's value. Text that may nest is held to a JSON body's limits before anything parses it, as
 * the part of the body it becomes: the form is the outermost object and each name in the field's
 * name one level more (a value under `a[b]` nests as deep as it could under `{"a":{"b":…}}`), and
 * the members of every field count against the form's one budget. Before, a field of 5,000 `[` was
 * parsed and then ran out of stack in the walks after, and 60 fields of 20,000 members each (over a
 * million members, which a JSON body is refused for) held the event loop about a second.
 */
function fieldValue(text: string, field: { rawKey: string; levels: number; keepText: boolean; declaredJson: boolean }, budget: MemberBudget): Json {
  const parses = !field.keepText && TYPED.test(text);
  const name = field.rawKey.slice(0, 100);
  const named = param(field.rawKey);
  if (field.declaredJson || (parses && text.length > 0 && (text[0] === '[' || text[0] === '{'))) {
    const problem = scanJsonWithin(text, MAX_JSON_DEPTH - field.levels, Infinity, budget);
    if (problem === 'too_deep')
      throw errors.invalidRequest(`Form field '${name}' holds JSON nested deeper than ${MAX_JSON_DEPTH} levels, counting the form and each name in the field's name as one.`, named, 'too_deep');
    if (problem !== undefined)
      throw errors.invalidRequest(`The form's fields hold more than ${MAX_OBJECT_MEMBERS} members (objects, arrays and object fields) in all.`, named, 'too_many_fields');
  }
  let parsed: Json | undefined;
  try {
    if (parses || field.declaredJson) parsed = JSON.parse(escapeMarkerLookalikes(text)) as Json;
  } catch {
    if (field.declaredJson) throw errors.invalidJson(`Form field '${name}' is declared as JSON and is not valid JSON.`);
  }
  return parses && parsed !== undefined ? parsed : escapeMarkerLookalike(text);
}

/** A client's field name as an error's param: cut short, and never taken for a number marker (core/lossless-json.ts). */
function param(rawKey: string): string {
  return escapeMarkerLookalike(rawKey.slice(0, 100));
}

function setPath(root: JsonObject, path: string[], value: Json, rawKey: string): void {
  let node: JsonObject | Json[] = root;
  for (let i = 0; i < path.length; i++) {
    const key = path[i]!;
    const last = i === path.length - 1;
    const nextIsArray = !last && path[i + 1] === '';
    if (Array.isArray(node)) {
      if (key !== '') throw errors.invalidRequest(`Form field '${rawKey}' mixes list and object forms.`, param(rawKey), 'invalid_body');
      if (last) node.push(value);
      else {
        const child: JsonObject | Json[] = nextIsArray ? [] : {};
        node.push(child);
        node = child;
      }
      continue;
    }
    if (key === '') throw errors.invalidRequest(`Form field '${rawKey}' mixes list and object forms.`, param(rawKey), 'invalid_body');
    // Own properties only: a child object is a plain one, and `a[toString]` must not find Object.prototype's.
    const existing: Json | undefined = Object.hasOwn(node, key) ? node[key] : undefined;
    if (last) {
      if (existing !== undefined) throw errors.invalidRequest(`Form field '${rawKey}' is sent twice.`, param(rawKey), 'invalid_body');
      node[key] = value;
      continue;
    }
    if (existing === undefined) {
      const child: JsonObject | Json[] = nextIsArray ? [] : {};
      node[key] = child;
      node = child;
    } else if (Array.isArray(existing) === nextIsArray && typeof existing === 'object' && existing !== null) {
      node = existing as JsonObject | Json[];
    } else throw errors.invalidRequest(`Form field '${rawKey}' conflicts with another field.`, param(rawKey), 'invalid_body');
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
