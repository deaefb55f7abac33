import { clip } from '../core/redact.js';
import { retryAfterSeconds } from '../http/retry-after.js';

export { retryAfterSeconds };
import type { UpstreamResponse, UpstreamVerdict } from '../http/types.js';

/**
 * Shared pieces of the vendors' error classification. Vendor messages reach the client only for
 * client-fault verdicts, trimmed; auth and server failures surface as the gateway's own 502/503/504.
 */
const MAX_MESSAGE = 500;

/**
 * The message on as few lines as it takes: blank lines and indentation go, but each line break
 * stays one, and spaces within a line stay as they are. This runs before the redaction (the
 * verdict is redacted where it leaves), which reads line structure: a credential's base64 wrapped
 * into lines is joined at the breaks, and a hex dump is read line by line (its columns by their
 * spacing). Whitespace collapsed to one space made both unreadable to it.
 */
export function trimMessage(message: string): string {
  const m = message.replace(/\s+/g, (ws) => (ws.includes('\n') ? '\n' : ws)).trim();
  // Cut where the redaction looks for what a cut leaves of a credential (core/redact-cut.ts).
  return clip(m, MAX_MESSAGE);
}

/**
 * The mapping every vendor starts from: 401/403 are our credentials, 404 means this upstream lacks the
 * model (a configuration problem another upstream may not have), 408/409/429/5xx are worth another
 * upstream, 413/422 and other 4xx are the client's. Vendors refine it (moderation, quota codes).
 */
export function defaultVerdict(res: UpstreamResponse, message: string, param?: string): UpstreamVerdict {
  const s = res.status;
  const msg = trimMessage(message || `HTTP ${s}`);
  if (s === 401 || s === 403) return { kind: 'auth', status: s, message: msg };
  if (s === 404 || s === 408 || s === 409 || s === 425 || s === 429 || s >= 500)
    return { kind: 'retryable', status: s, message: msg, retryAfterSeconds: retryAfterSeconds(res.headers) };
  if (s === 413 || s === 422) return { kind: 'client', status: s, message: msg, param };
  return { kind: 'client', status: 400, message: msg, param };
}
