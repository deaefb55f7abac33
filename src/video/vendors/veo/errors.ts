import { retryAfterSeconds } from '../../../http/retry-after.js';
import { isObject, type Json, type JsonObject } from '../../../core/json.js';
import { clip } from '../../../core/redact.js';
import type { UpstreamResponse, UpstreamVerdict } from '../../../http/types.js';

/** Responsible-AI wording in Vertex messages (support codes, safety filters, usage guidelines). */
export const MODERATION =
  /support codes?:|responsible ai|\brai\b|safety|sensitive|violat|usage guidelines|prohibited|blocked|filtered/i;

/** A 403 about features the project must be approved for: the request's fault, not our credentials'. */
const NOT_ALLOWLISTED = /allow[- ]?list|allow_all|person ?generation|not (?:been )?approved/i;

/**
 * Classifies a non-2xx answer from Vertex (google.rpc envelope), the token endpoint (OAuth2 shape)
 * or Cloud Storage (JSON API envelope).
 */
export function classifyVertexError(res: UpstreamResponse): UpstreamVerdict {
  const { status } = res;
  const detail = describe(res);
  const message = hideProject(detail.message);
  if (status === 401) return { kind: 'auth', status, message };
  if (status === 403) {
    if (NOT_ALLOWLISTED.test(message)) return { kind: 'client', status: 400, message };
    return { kind: 'auth', status, message };
  }
  if (status === 429 || status === 408 || status === 409 || status >= 500) {
    const retryAfterSeconds = retryAfter(res.headers, detail.details);
    return { kind: 'retryable', status, message, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
  }
  if (MODERATION.test(message)) return { kind: 'moderation', message, code: 'content_policy_violation' };
  if (status === 404 || status === 413 || status === 422) return { kind: 'client', status, message };
  return { kind: 'client', status: 400, message };
}

function describe(res: UpstreamResponse): { message: string; details?: Json } {
  const json = res.json;
  if (isObject(json)) {
    const e = json['error'];
    if (isObject(e)) {
      const msg = typeof e['message'] === 'string' ? e['message'] : '';
      const st = typeof e['status'] === 'string' ? e['status'] : '';
      return { message: [st, msg].filter(Boolean).join(': ') || `HTTP ${res.status}`, details: e['details'] };
    }
    if (typeof e === 'string') {
      const d = json['error_description'];
      return { message: typeof d === 'string' ? `${e}: ${d}` : e };
    }
  }
  const text = clip(res.text.trim(), 500);
  return { message: text || `Vertex AI answered HTTP ${res.status}.` };
}

/** Seconds to wait: Retry-After (seconds or HTTP date), else a google.rpc.RetryInfo detail. */
function retryAfter(headers: Record<string, string>, details: Json | undefined): number | undefined {
  const standard = retryAfterSeconds(headers);
  if (standard !== undefined) return standard;
  if (Array.isArray(details)) {
    for (const d of details) {
      if (!isObject(d)) continue;
      const delay = (d as JsonObject)['retryDelay'];
      if (typeof delay === 'string') {
        const m = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim());
        if (m) return Number(m[1]);
      }
    }
  }
  return undefined;
}

/** Model paths in Vertex messages name the operator's cloud project; clients have no business seeing it. */
function hideProject(text: string): string {
  return text.replace(/projects\/[^/\s`'"]+/g, 'projects/-');
}
