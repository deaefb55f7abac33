import { isObject, type Json, type JsonObject } from '../core/json.js';
import type { UpstreamVerdict } from '../http/types.js';
import { chatTokenCounter } from './tokens.js';
import { notACompletion, parseJson } from './upstream.js';

/**
 * The pure work on a successful (2xx) non-streamed chat answer, the same whether it runs on the
 * main thread (a small answer) or in the answer worker (large-completions.ts): parse it, tell a
 * completion from a failure answered 200, count its output when no usage came, and render what
 * the client receives.
 */

/** The parsed completion, or the verdict that the body holds none (upstream.ts `notACompletion`). */
export function readCompletion(raw: Buffer): { json: JsonObject } | { verdict: UpstreamVerdict } {
  const json = parseJson(raw);
  const verdict = notACompletion(json);
  return verdict ? { verdict } : { json: json as JsonObject };
}

/**
 * The answer to send: `usage.cost` is added to the vendor's usage; every other field is passed on as
 * it came, but for the upstream's own credentials (`scrub`), removed as from a stream (generated text
 * may otherwise look like anything, so only those). The upstream's bytes themselves when nothing changes.
 */
export function renderCompletion(raw: Buffer, json: JsonObject, cost: Json, scrub: (text: string) => string): Buffer {
  const priced = isObject(json.usage) ? JSON.stringify({ ...json, usage: { ...json.usage, cost } }) : undefined;
  const text = priced ?? raw.toString('utf8');
  const scrubbed = scrub(text);
  return priced === undefined && scrubbed === text ? raw : Buffer.from(scrubbed);
}

/** Output tokens counted from the returned messages, for a vendor that reported no usage. */
export async function generatedText(json: JsonObject): Promise<number> {
  let n = 0;
  if (!Array.isArray(json.choices)) return 0;
  // Upstream text is counted under the same bounds as a client's.
  const counter = chatTokenCounter();
  for (const c of json.choices) {
    if (isObject(c) && isObject(c.message) && typeof c.message.content === 'string') n += await counter.count(c.message.content);
  }
  return n;
}
