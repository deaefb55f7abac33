import { retryAfterSeconds } from '../http/retry-after.js';
import { isObject, type Json, type JsonObject } from '../core/json.js';
import type { Upstream, UpstreamRequest, UpstreamVerdict } from '../http/types.js';

/** Vendors whose chat completions speak OpenAI's protocol as it is. */
export const CHAT_VENDORS: ReadonlySet<string> = new Set(['openai']);

/** OpenAI's path, whether the configured base URL is the origin or already ends in /v1. */
export function chatUrl(up: Upstream): string {
  return /\/v1$/.test(up.baseUrl) ? `${up.baseUrl}/chat/completions` : `${up.baseUrl}/v1/chat/completions`;
}

/**
 * The client's body goes upstream as it is, except for the model name (mapped for this upstream)
 * and, when streaming, `stream_options.include_usage`, without which the stream carries no usage
 * to bill from.
 */
export function buildChatRequest(up: Upstream, upstreamModel: string, body: JsonObject, stream: boolean): UpstreamRequest {
  const out: JsonObject = { ...body, model: upstreamModel };
  if (stream) out.stream_options = { ...(isObject(body.stream_options) ? body.stream_options : {}), include_usage: true };
  const headers: Record<string, string> = { accept: stream ? 'text/event-stream' : 'application/json' };
  if (up.apiKey) headers.authorization = `Bearer ${up.apiKey}`;
  if (typeof up.options.organization === 'string') headers['openai-organization'] = up.options.organization;
  if (typeof up.options.project === 'string') headers['openai-project'] = up.options.project;
  return { method: 'POST', url: chatUrl(up), headers, body: out };
}

const MODERATION_CODES = new Set(['content_policy_violation', 'content_filter']);

/**
 * OpenAI's error statuses, sorted for failover: our credentials (401/403) and capacity (408, 409,
 * 429, 5xx) move to the next upstream; the client's own mistakes stop here with the vendor's words.
 */
export function classifyChatError(status: number, json: Json | undefined, headers: Record<string, string>): UpstreamVerdict {
  const err = isObject(json) && isObject(json.error) ? json.error : undefined;
  const message = typeof err?.message === 'string' && err.message ? err.message : `The upstream answered ${status}.`;
  const code = typeof err?.code === 'string' ? err.code : undefined;
  const param = typeof err?.param === 'string' ? err.param : undefined;
  if (status === 401 || status === 403) return { kind: 'auth', status, message };
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    const wait = retryAfterSeconds(headers);
    return { kind: 'retryable', status, message, retryAfterSeconds: wait !== undefined && wait > 0 ? wait : undefined };
  }
  if (code && MODERATION_CODES.has(code)) return { kind: 'moderation', message, code };
  const clientStatus = status === 404 || status === 413 || status === 422 ? status : 400;
  return { kind: 'client', status: clientStatus, message, code, param };
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
