import { retryAfterSeconds } from '../http/retry-after.js';
import { isObject, omit, type Json, type JsonObject } from '../core/json.js';
import { openAiEndpoint } from '../protocols/openai/endpoint.js';
import { isModeration, readErrorEnvelope } from '../protocols/openai/errors.js';
import type { Upstream, UpstreamRequest, UpstreamVerdict } from '../http/types.js';

/** Vendors whose chat completions speak OpenAI's protocol as it is. */
export const CHAT_VENDORS: ReadonlySet<string> = new Set(['openai']);

/** The chat completions URL of an upstream, in any of the OpenAI family's URL forms (Azure included). */
export function chatUrl(up: Upstream, upstreamModel = ''): string {
  return openAiEndpoint(up, 'chat/completions', upstreamModel).url;
}

/**
 * The client's body goes upstream as it is, except for the model name (mapped for this upstream)
 * and, when streaming, `stream_options.include_usage`, without which the stream carries no usage
 * to bill from.
 */
export function buildChatRequest(up: Upstream, upstreamModel: string, body: JsonObject, stream: boolean, requestId?: string): UpstreamRequest {
  const endpoint = openAiEndpoint(up, 'chat/completions', upstreamModel);
  const out: JsonObject = endpoint.sendsModel ? { ...body, model: upstreamModel } : omit(body, ['model']);
  if (stream) out.stream_options = { ...(isObject(body.stream_options) ? body.stream_options : {}), include_usage: true };
  const headers: Record<string, string> = { ...endpoint.headers, accept: stream ? 'text/event-stream' : 'application/json' };
  // OpenAI keeps the caller's id with its own logs: ours, so the two can be matched.
  if (requestId) headers['x-client-request-id'] = requestId;
  return { method: 'POST', url: endpoint.url, headers, body: out };
}

/**
 * OpenAI's error statuses, sorted for failover: our credentials (401/403) and capacity (408, 409,
 * 429, 5xx) move to the next upstream; the client's own mistakes stop here with the vendor's words.
 */
export function classifyChatError(status: number, json: Json | undefined, headers: Record<string, string>): UpstreamVerdict {
  const env = readErrorEnvelope({ status, headers, json, text: '' }, `The upstream answered ${status}.`);
  const { message, code, param } = env;
  if (status === 401 || status === 403) return { kind: 'auth', status, message };
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    const wait = retryAfterSeconds(headers);
    return { kind: 'retryable', status, message, retryAfterSeconds: wait !== undefined && wait > 0 ? wait : undefined };
  }
  if (isModeration(env)) return { kind: 'moderation', message, ...(code ? { code } : {}) };
  const clientStatus = status === 404 || status === 413 || status === 422 ? status : 400;
  return { kind: 'client', status: clientStatus, message, code, param };
}

/**
 * Whether a chat body or stream event carries an error: beside `choices`, or inside one of them
 * (some compatible servers report a failed choice so; a completion with a failed choice is no more
 * a completion than one with a failed request). `null` is none: some servers add `"error": null`.
 */
export function carriesError(json: JsonObject): boolean {
  const said = (v: Json | undefined): boolean => v !== undefined && v !== null;
  return said(json.error) || (Array.isArray(json.choices) && json.choices.some((c) => isObject(c) && said(c.error)));
}

/**
 * The verdict on a 2xx body that holds no completion: not JSON, no `choices` array, or an `error`
 * (carriesError; some compatible servers and proxies answer their failures 200). It is the upstream
 * failing, as a 5xx would be: the next upstream is tried, nothing is billed, and the body, which may
 * quote the upstream's own key or internal addresses, goes nowhere (the message is ours).
 */
export function notACompletion(json: Json | undefined): UpstreamVerdict | undefined {
  if (!isObject(json)) return { kind: 'retryable', status: 502, message: 'The upstream sent a body that is not JSON.' };
  if (!Array.isArray(json.choices) || carriesError(json)) return { kind: 'retryable', status: 502, message: 'The upstream answered without a completion.' };
  return undefined;
}

/** Parses a buffered body as JSON, or undefined. */
export function parseJson(raw: Buffer): Json | undefined {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as Json;
  } catch {
    return undefined;
  }
}
