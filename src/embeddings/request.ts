import { errors } from '../core/errors.js';
import { FORBIDDEN_KEYS, findForbiddenKey, isObject, type Json, type JsonObject } from '../core/json.js';
import type { EmbeddingInput, EmbeddingRequest, EncodingFormat, InputType } from './types.js';

/** OpenAI's documented ceiling; vendors with smaller limits get the batch split, not refused. */
export const MAX_INPUTS = 2048;
/**
 * Characters per request, summed over string inputs: about 500k tokens, above what any vendor
 * embeds in one request. Refusing here keeps a near-limit body from costing seconds of
 * tokenizer CPU before the vendor would refuse it anyway.
 */
export const MAX_INPUT_CHARS = 2_000_000;
const tooLong = () => errors.invalidRequest(`'input' is longer than ${MAX_INPUT_CHARS} characters in total; split it over several requests.`, 'input', 'input_too_long');

/**
 * The vendor-specific fields of one request (`extra_body` and unknown top-level fields), as JSON text.
 * They go into every upstream call the request is split into (one per input for gemini-embedding and
 * Bedrock, up to 2,048): a megabyte of them was a gigabyte sent upstream and seconds of CPU. Vendors'
 * own parameters are a few short values; 64 Ki characters is far above any of them.
 */
export const MAX_EXTRA_CHARS = 64 * 1024;

const STANDARD_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'encoding_format',
  'dimensions',
  'user',
  'task_type',
  'title',
  'input_type',
  'extra_body',
]);
const ENCODINGS: ReadonlySet<string> = new Set(['float', 'base64']);
const INPUT_TYPES: ReadonlySet<string> = new Set(['text', 'image', 'video', 'audio']);
const MAX_TOKEN_ID = 0x7fffffff;

/**
 * Validates a parsed JSON body (spec 2.5) and normalises it. Every refusal is a 400 naming the field.
 * Unknown top-level fields are treated like `extra_body` entries, because the official SDKs' own
 * `extra_body` option merges its keys into the top level of the JSON they send; a literal
 * `extra_body` object wins over them on conflict.
 */
export function parseEmbeddingRequest(body: JsonObject): EmbeddingRequest {
  const model = body['model'];
  if (typeof model !== 'string' || model === '')
    throw errors.invalidRequest("'model' is required and must be a string.", 'model', 'missing_required_parameter');

  const req: EmbeddingRequest = {
    model,
    inputs: parseInput(body['input']),
    encodingFormat: parseEncoding(body['encoding_format']),
    extra: parseExtra(body),
  };
  const dimensions = body['dimensions'];
  if (dimensions !== undefined && dimensions !== null) {
    if (typeof dimensions !== 'number' || !Number.isSafeInteger(dimensions) || dimensions <= 0)
      throw errors.invalidRequest("'dimensions' must be a positive integer.", 'dimensions');
    req.dimensions = dimensions;
  }
  const user = optionalString(body, 'user');
  if (user !== undefined) req.user = user;
  const taskType = optionalString(body, 'task_type');
  if (taskType !== undefined) req.taskType = taskType;
  const title = optionalString(body, 'title');
  if (title !== undefined) req.title = title;
  const inputType = body['input_type'];
  if (inputType !== undefined && inputType !== null) {
    if (typeof inputType !== 'string' || !INPUT_TYPES.has(inputType))
      throw errors.invalidRequest("'input_type' must be one of text, image, video, audio.", 'input_type');
    req.inputType = inputType as InputType;
  }
  return req;
}

function parseInput(input: Json | undefined): EmbeddingInput[] {
  if (input === undefined || input === null)
    throw errors.invalidRequest("'input' is required.", 'input', 'missing_required_parameter');
  if (typeof input === 'string') {
    if (input === '') throw errors.invalidRequest("'input' must not be an empty string.", 'input');
    if (input.length > MAX_INPUT_CHARS) throw tooLong();
    return [input];
  }
  if (!Array.isArray(input))
    throw errors.invalidRequest("'input' must be a string, an array of strings or an array of token arrays.", 'input');
  if (input.length === 0) throw errors.invalidRequest("'input' must not be an empty array.", 'input');
  // A flat array of integers is one tokenised input, as the OpenAI API reads it.
  if (typeof input[0] === 'number') return [tokenArray(input, 'input')];
  if (input.length > MAX_INPUTS)
    throw errors.invalidRequest(`'input' may hold at most ${MAX_INPUTS} items; got ${input.length}.`, 'input');
  const out: EmbeddingInput[] = new Array(input.length);
  const tokenised = Array.isArray(input[0]);
  let chars = 0;
  for (let i = 0; i < input.length; i++) {
    const item = input[i];
    if (tokenised) {
      if (!Array.isArray(item))
        throw errors.invalidRequest(`'input[${i}]' must be a token array like the other items.`, 'input');
      out[i] = tokenArray(item, `input[${i}]`);
    } else {
      if (typeof item !== 'string')
        throw errors.invalidRequest(`'input[${i}]' must be a string.`, 'input');
      if (item === '') throw errors.invalidRequest(`'input[${i}]' must not be an empty string.`, 'input');
      chars += item.length;
      if (chars > MAX_INPUT_CHARS) throw tooLong();
      out[i] = item;
    }
  }
  return out;
}

function tokenArray(items: Json[], where: string): number[] {
  if (items.length === 0) throw errors.invalidRequest(`'${where}' must not be an empty token array.`, 'input');
  for (const t of items) {
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN_ID)
      throw errors.invalidRequest(`'${where}' must hold non-negative integer token ids only.`, 'input');
  }
  return items as number[];
}

function parseEncoding(v: Json | undefined): EncodingFormat {
  if (v === undefined || v === null) return 'float';
  if (typeof v !== 'string' || !ENCODINGS.has(v))
    throw errors.invalidRequest("'encoding_format' must be 'float' or 'base64'.", 'encoding_format');
  return v as EncodingFormat;
}

function optionalString(body: JsonObject, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw errors.invalidRequest(`'${key}' must be a string.`, key);
  return v;
}

function parseExtra(body: JsonObject): JsonObject {
  const literal = body['extra_body'];
  if (literal !== undefined && literal !== null && !isObject(literal))
    throw errors.invalidRequest("'extra_body' must be an object.", 'extra_body');
  let extra: JsonObject | undefined;
  for (const key of Object.keys(body)) {
    if (STANDARD_FIELDS.has(key)) continue;
    if (FORBIDDEN_KEYS.has(key)) throw errors.invalidRequest(`The key '${key}' is not allowed.`, key);
    (extra ??= {})[key] = body[key]!;
  }
  if (isObject(literal)) extra = extra ? { ...extra, ...literal } : literal;
  if (!extra) return EMPTY;
  const bad = findForbiddenKey(extra);
  if (bad) throw errors.invalidRequest(`The key '${bad}' is not allowed.`, 'extra_body');
  if (JSON.stringify(extra).length > MAX_EXTRA_CHARS)
    throw errors.invalidRequest(
      `'extra_body' and the other vendor fields may hold at most ${MAX_EXTRA_CHARS} characters of JSON.`,
      'extra_body',
      'extra_body_too_large',
    );
  return extra;
}

const EMPTY: JsonObject = Object.freeze({}) as JsonObject;
