import { errors } from '../core/errors.js';
import { isObject, type Json, type JsonObject } from '../core/json.js';

/**
 * The few checks the gateway itself needs (it estimates tokens from `messages` and reads `stream`);
 * everything else is the vendor's to judge, so new parameters work without a change here.
 */
export function validateChatBody(body: JsonObject): void {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw errors.invalidRequest("'messages' must be a non-empty array of message objects.", 'messages', 'missing_required_parameter');
  messages.forEach((m, i) => {
    if (!isObject(m) || typeof m.role !== 'string')
      throw errors.invalidRequest(`'messages[${i}]' must be an object with a string 'role'.`, `messages[${i}]`);
  });
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw errors.invalidRequest("'stream' must be a boolean.", 'stream');
  for (const p of ['max_tokens', 'max_completion_tokens', 'n'] as const) {
    if (!optionalPositiveInt(body[p])) throw errors.invalidRequest(`'${p}' must be a positive integer (at most ${Number.MAX_SAFE_INTEGER}).`, p);
  }
  if (body.stream_options !== undefined && body.stream_options !== null && !isObject(body.stream_options))
    throw errors.invalidRequest("'stream_options' must be an object.", 'stream_options');
}

/** Counts the hold multiplies must be exact: 1e228 is an integer to JavaScript, and made holds no ledger can write. */
function optionalPositiveInt(v: Json | undefined): boolean {
  return v === undefined || v === null || (typeof v === 'number' && Number.isSafeInteger(v) && v > 0);
}
