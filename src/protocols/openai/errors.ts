import { retryAfterSeconds as standardRetryAfter } from '../../http/retry-after.js';
import { isObject, type Json } from '../../core/json.js';
import { clip } from '../../core/redact.js';
import type { UpstreamResponse, UpstreamVerdict } from '../../http/types.js';

/**
 * Error handling shared by the OpenAI and Azure OpenAI adapters. Both answer with the envelope
 * {"error": {"message", "code", "type"?, "param"?, "innererror"?}}; Azure's API gateway sometimes
 * answers {"statusCode", "message"} instead, and proxies in front of either may send plain text.
 */
export interface ErrorEnvelope {
  /**
   * As the upstream wrote it: the core redacts it with the upstream's credentials before a client or
   * a log sees it (redact.ts). Redacting shapes here first would cut a key the message wraps over
   * lines into pieces the search for the configured key no longer finds whole.
   */
  message: string;
  code?: string;
  type?: string;
  param?: string;
  /** Azure's innererror.code, e.g. ResponsibleAIPolicyViolation. */
  innerCode?: string;
}

function str(v: Json | undefined): string | undefined {
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number') return String(v);
  return undefined;
}

/** Reads the family's error envelope; `fallback` is the message when the body says nothing usable. */
export function readErrorEnvelope(res: UpstreamResponse, fallback?: string): ErrorEnvelope {
  const body = res.json;
  let env: Omit<ErrorEnvelope, 'message'> & { message?: string } = {};
  if (isObject(body)) {
    const e = body.error;
    if (isObject(e)) {
      const inner = isObject(e.innererror) ? e.innererror : undefined;
      env = { message: str(e.message), code: str(e.code), type: str(e.type), param: str(e.param), innerCode: str(inner?.code) };
    } else if (typeof e === 'string') env = { message: e };
    else env = { message: str(body.message), code: str(body.code) };
  }
  const raw = env.message ?? (clip(res.text.trim(), 500) || fallback || `HTTP ${res.status}`);
  return { ...env, message: raw };
}

/** OpenAI's reset hints look like "1s", "20ms", "6m0s" or "1h2m3.5s". */
function parseGoDuration(s: string): number | undefined {
  const m = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/.exec(s.trim());
  if (!m || s.trim() === '') return undefined;
  const [, h, min, sec, ms] = m;
  return Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(sec ?? 0) + Number(ms ?? 0) / 1000;
}

/**
 * How long the upstream asks us to wait: Azure's retry-after-ms, the standard Retry-After (seconds
 * or an HTTP date), then OpenAI's x-ratelimit-reset-requests / -tokens hints.
 */
export function retryAfterSeconds(headers: Record<string, string>, now = Date.now()): number | undefined {
  const standard = standardRetryAfter(headers, now);
  if (standard !== undefined) return standard;
  for (const h of ['x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens']) {
    const v = headers[h] !== undefined ? parseGoDuration(headers[h]!) : undefined;
    if (v !== undefined) return v;
  }
  return undefined;
}

const MODERATION_CODES = /^(moderation_blocked|content_policy_violation|content_filter|contentfilter|responsibleaipolicyviolation|safety_violation)$/i;
const MODERATION_TEXT = /moderation|content (management )?polic|content filter|safety system/i;

export function isModeration(env: ErrorEnvelope): boolean {
  return (
    (env.code !== undefined && MODERATION_CODES.test(env.code)) ||
    (env.innerCode !== undefined && MODERATION_CODES.test(env.innerCode)) ||
    MODERATION_TEXT.test(env.message)
  );
}

/**
 * Classifies a non-2xx answer. `misconfigured` recognises answers that mean "this upstream does not
 * serve the configured model/deployment/version": that is the operator's setup, not the caller's
 * request, so it is reported like bad credentials (fail over to another upstream, log loudly).
 */
export function classifyOpenAiStyle(
  res: UpstreamResponse,
  misconfigured: (env: ErrorEnvelope, status: number) => boolean,
): UpstreamVerdict {
  const env = readErrorEnvelope(res);
  const s = res.status;
  if (s === 401 || s === 403) return { kind: 'auth', message: env.message, status: s };
  if (s === 429 || s === 408 || s >= 500 || s < 400) {
    const wait = retryAfterSeconds(res.headers);
    return { kind: 'retryable', message: env.message, status: s, ...(wait !== undefined ? { retryAfterSeconds: wait } : {}) };
  }
  if (isModeration(env)) return { kind: 'moderation', message: env.message, ...(env.code ? { code: env.code } : {}) };
  if (misconfigured(env, s)) return { kind: 'auth', message: env.message, status: s };
  const status = s === 404 || s === 413 || s === 422 ? s : 400;
  return {
    kind: 'client',
    status,
    message: env.message,
    ...(env.code ? { code: env.code } : {}),
    ...(env.param ? { param: env.param } : {}),
  };
}
