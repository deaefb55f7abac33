import { Agent } from 'undici';
import { errors } from '../core/errors.js';
import { readAnswer } from './answer-budget.js';
import type { BodyBudget } from './body-budget.js';
import { guardedAgent } from './guarded-agent.js';
import { isBlockedAddress } from './ssrf.js';
import { guard } from './streams.js';
import { TransportError } from './types.js';

/**
 * The media could not be fetched (network failure, timeout, a non-200 answer): a problem with the
 * remote resource, not with the request's shape. Callers turn it into a failed job (spec 3).
 */
export class MediaUnreachableError extends Error {
  constructor(readonly param: string, message: string) {
    super(message);
    this.name = 'MediaUnreachableError';
  }
}

export interface MediaFetchOptions {
  allowPrivateNetworks: boolean;
  /**
   * Origins (scheme://host:port) fetched even though they are private or loopback: the embedded
   * default's own simulators. Everything else private stays refused.
   */
  allowedOrigins?: readonly string[];
  maxBytes: number;
  timeoutMs: number;
  /** The process-wide budget of answers read whole (answer-budget.ts); fetched media counts against it. */
  budget?: BodyBudget;
}

export interface FetchedMedia {
  base64: string;
  mimeType: string;
}

/**
 * Fetches client-supplied media (e.g. a first-frame image a vendor wants as bytes). The address
 * check runs inside the connection's own DNS lookup, so the address that is checked is the one
 * that is connected to (no DNS-rebinding window). Redirects are not followed.
 */
export class MediaFetcher {
  private readonly agent: Agent;
  private readonly trusted: ReadonlySet<string>;
  /** Connects without the address check; used only for the allowed origins. */
  private readonly trustedAgent?: Agent;

  constructor(private readonly opts: MediaFetchOptions) {
    this.trusted = new Set((opts.allowedOrigins ?? []).map((o) => new URL(o).origin));
    if (this.trusted.size > 0) this.trustedAgent = new Agent({ connect: { timeout: opts.timeoutMs } });
    // The address check runs in the connection's own lookup (guarded-agent.ts).
    this.agent = guardedAgent({ allowPrivateNetworks: opts.allowPrivateNetworks, connectTimeoutMs: opts.timeoutMs });
  }

  /**
   * The rules client media follow (`video.media`): origins fetched without the address check, and
   * whether private networks are allowed. Video downloads at URLs a vendor gave follow them too.
   */
  get policy(): { trusted: ReadonlySet<string>; allowPrivateNetworks: boolean } {
    return { trusted: this.trusted, allowPrivateNetworks: this.opts.allowPrivateNetworks };
  }

  /**
   * The address-checked agent. It lives as long as the fetcher (closed with it), so video downloads
   * at vendor-given URLs, which use it too, keep their connections to a vendor's CDN alive.
   */
  get guardedAgent(): Agent {
    return this.agent;
  }

  /** `signal` (the client's request) aborts the fetch too; each fetch also has an overall deadline. */
  async fetch(url: string, param: string, signal?: AbortSignal): Promise<FetchedMedia> {
    if (url.startsWith('data:')) return decodeDataUrl(url, param, this.opts.maxBytes);
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw errors.invalidRequest(`'${param}' is not a valid URL.`, param, 'invalid_media');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw errors.invalidRequest(`'${param}' must be an http(s) or data: URL.`, param, 'invalid_media');
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const trusted = this.trusted.has(u.origin);
    // Literal IPs never pass through the lookup, so check them here.
    if (!trusted && !this.opts.allowPrivateNetworks && /^[\d.]+$|:/.test(host) && isBlockedAddress(host))
      throw errors.invalidRequest(`'${param}' points at a private or local address.`, param, 'invalid_media');
    try {
      const res = await (trusted ? this.trustedAgent! : this.agent).request({
        origin: u.origin,
        path: u.pathname + u.search,
        method: 'GET',
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
        // A server trickling bytes never trips an idle timeout; this bounds the whole transfer.
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(this.opts.timeoutMs)]) : AbortSignal.timeout(this.opts.timeoutMs),
      });
      // A reset or the deadline may fail the body before (or while) it is read.
      guard(res.body);
      if (res.statusCode !== 200) {
        await res.body.dump().catch(() => undefined);
        throw new MediaUnreachableError(param, `'${param}' could not be fetched (HTTP ${res.statusCode}).`);
      }
      let raw: Buffer;
      try {
        // The whole transfer is bounded by the signal's deadline above, hence no deadline here.
        raw = await readAnswer(res.body, res.headers['content-length'], { budget: this.opts.budget, maxBytes: this.opts.maxBytes }, Infinity, signal);
      } catch (e) {
        if (e instanceof TransportError && e.reason === 'too_large')
          throw errors.invalidRequest(`'${param}' is larger than ${this.opts.maxBytes} bytes.`, param, 'invalid_media');
        throw e;
      }
      const ctype = String(res.headers['content-type'] ?? 'application/octet-stream').split(';')[0]!.trim();
      return { base64: raw.toString('base64'), mimeType: ctype };
    } catch (e) {
      if ((e as { status?: number }).status || e instanceof MediaUnreachableError) throw e;
      if (signal?.aborted) throw new TransportError('aborted', 'the client is gone', false);
      if ((e as { code?: string }).code === 'EBLOCKED' || String((e as Error).message).includes('not allowed'))
        throw errors.invalidRequest(`'${param}' points at a private or local address.`, param, 'invalid_media');
      throw new MediaUnreachableError(param, `'${param}' could not be fetched.`);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.agent.close(), this.trustedAgent?.close()]);
  }
}

function decodeDataUrl(url: string, param: string, maxBytes: number): FetchedMedia {
  const m = /^data:([\w.+-]+\/[\w.+-]+)?(;[^,]*)?,(.*)$/s.exec(url);
  if (!m || !(m[2] ?? '').includes('base64'))
    throw errors.invalidRequest(`'${param}' must be a base64 data: URL.`, param, 'invalid_media');
  const b64 = m[3]!;
  if (b64.length * 0.75 > maxBytes) throw errors.invalidRequest(`'${param}' is larger than ${maxBytes} bytes.`, param, 'invalid_media');
  return { base64: b64, mimeType: m[1] ?? 'application/octet-stream' };
}
