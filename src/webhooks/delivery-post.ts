import type { Agent, Dispatcher } from 'undici';
import type { Clock } from '../core/clock.js';
import type { OutboxRecord } from '../store/webhook-types.js';
import { signedHeaders } from './signing.js';

/** Bytes of a receiver's answer read at most (it is discarded; only the status matters). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Time spent at most reading (and dropping) the body of an answer once its status has arrived. */
const DRAIN_MS = 1_000;

/** What one POST came to: the status, why it failed, and whether the receiver never answered at all. */
export interface PostResult {
  status: number | null;
  error: string | null;
  /** A timeout before any answer or a connection failure: counts towards the receiver's back-off. */
  unreachable: boolean;
}

/**
 * One signed POST of a delivery to its receiver through the SSRF-guarded `agent`, bounded as a
 * whole by `attemptMs`; redirects are not followed. A refused, unreachable or silent receiver is
 * a PostResult, not an exception.
 */
export async function postDelivery(agent: Agent, row: OutboxRecord, secrets: readonly string[], attemptMs: number, clock: Clock): Promise<PostResult> {
  let url: URL;
  try {
    url = new URL(row.url);
  } catch {
    return { status: null, error: 'invalid URL', unreachable: false };
  }
  const headers = { 'content-type': 'application/json', 'user-agent': 'video-embeddings-gateway-webhooks', ...signedHeaders(secrets, row.id, row.payload, new Date(clock.now())) };
  const deadline = AbortSignal.timeout(attemptMs);
  let res: Dispatcher.ResponseData;
  try {
    res = await agent.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'POST',
      headers,
      body: row.payload,
      headersTimeout: attemptMs,
      bodyTimeout: attemptMs,
      signal: deadline,
    });
  } catch (e) {
    const code = (e as { code?: string }).code;
    // The guarded agent refuses a private address before connecting: a literal one at once, a name on the address it resolves to.
    if (code === 'EBLOCKED' || String((e as Error).message).includes('not allowed')) return { status: null, error: 'the target is or resolves to a private or local address', unreachable: false };
    if ((e as Error).name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
      return { status: null, error: `no answer within ${attemptMs} ms`, unreachable: true };
    return { status: null, error: `connection failed${code ? ` (${code})` : ''}`, unreachable: true };
  }
  // Only the status matters. The body is read a little (so the connection can be reused) and
  // dropped; a receiver that has answered 2xx has taken the event, however slowly the rest comes.
  const body = await drain(res.body, DRAIN_MS, deadline);
  if (body === 'broke') {
    // Broken off (reset, truncated) before its end: we cannot tell the receiver took the event,
    // so the attempt counts as failed and is retried (receivers dedupe on webhook-id).
    return { status: res.statusCode, error: 'the connection broke before the answer ended', unreachable: false };
  }
  return { status: res.statusCode, error: res.statusCode >= 300 && res.statusCode < 400 ? 'redirects are not followed' : null, unreachable: false };
}

/**
 * Reads and drops an answer's body until it ends, MAX_ANSWER_BYTES have come or `ms` have passed
 * (or the attempt's deadline fired): 'ended', or 'cut' when it was stopped early; 'broke' when the
 * connection failed first.
 */
async function drain(body: Dispatcher.ResponseData['body'], ms: number, deadline: AbortSignal): Promise<'ended' | 'cut' | 'broke'> {
  let cut = false;
  const timer = setTimeout(() => {
    cut = true;
    body.destroy();
  }, ms);
  let read = 0;
  try {
    for await (const chunk of body) {
      read += (chunk as Buffer).length;
      if (read > MAX_ANSWER_BYTES) {
        cut = true;
        break;
      }
    }
    return cut ? 'cut' : 'ended';
  } catch {
    return cut || deadline.aborted ? 'cut' : 'broke';
  } finally {
    clearTimeout(timer);
    if (cut) body.destroy();
  }
}
