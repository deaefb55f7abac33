import { request, type Dispatcher } from 'undici';
import { retryAfterSeconds } from '../../http/retry-after.js';
import { CliError, EXIT, exitCodeForStatus } from '../exit.js';
import { clientTiming, sleep, type ClientTiming } from './timing.js';

/** Statuses worth another try (spec 7.4): 429 and 503 with backoff; 504 after a short wait, for reads only. */
const RETRYABLE = new Set([429, 503]);
const MAX_TRIES = 5;
const MAX_ERROR_BODY = 64 * 1024;
/** The largest JSON answer read: far above any real one (a page of jobs, a batch of vectors), far below what would exhaust memory. */
export const MAX_JSON_BODY = 64 * 1024 * 1024;

type Headers = Record<string, string>;

/** A thin client for the gateway's public HTTP API: the key, the retries and the error mapping. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly key: string,
    private readonly timing: ClientTiming = clientTiming(),
  ) {}

  /** A JSON call; answers the parsed body of a 2xx, or throws a CliError carrying the gateway's message. */
  async json<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body === undefined ? {} : { 'content-type': 'application/json' }, body === undefined ? undefined : JSON.stringify(body));
    const text = await readBounded(res, `${method} ${path.split('?')[0]}`);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`${method} ${path}: the gateway answered ${res.statusCode} with a body that is not JSON`, EXIT.failure);
    }
  }

  /**
   * A streamed GET: the caller owns the body of the 2xx (or 416) response it gets back and must
   * consume or dump it. Any other status is turned into a CliError here.
   */
  open(path: string, headers: Headers): Promise<Dispatcher.ResponseData> {
    return this.send('GET', path, headers, undefined, [416]);
  }

  private async send(method: string, path: string, extra: Headers, body: string | undefined, alsoOk: number[] = []): Promise<Dispatcher.ResponseData> {
    const url = new URL(path, this.baseUrl);
    for (let attempt = 1; ; attempt++) {
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          method: method as Dispatcher.HttpMethod,
          headers: { authorization: `Bearer ${this.key}`, ...extra },
          body,
          headersTimeout: this.timing.headersTimeoutMs,
          bodyTimeout: this.timing.bodyTimeoutMs,
        });
      } catch (e) {
        const code = (e as { code?: string }).code ?? (e as Error).message;
        throw new CliError(`cannot reach the gateway at ${this.baseUrl} (${code})`, EXIT.failure);
      }
      // Whoever reads the body hears its errors (a rejected read, a listener of their own); this one
      // keeps a body destroyed unread (undici then emits RequestAbortedError) from ending the process.
      res.body.on('error', () => {});
      if ((res.statusCode >= 200 && res.statusCode < 300) || alsoOk.includes(res.statusCode)) return res;
      const retry = RETRYABLE.has(res.statusCode) || (res.statusCode === 504 && method === 'GET');
      if (retry && attempt < MAX_TRIES) {
        await res.body.dump();
        await sleep(this.waitMs(res, attempt));
        continue;
      }
      throw await apiError(method, path, res);
    }
  }

  /** Retry-After when the gateway sent one (at most a minute), else 1, 2, 4, 8 s (spec 7.4). */
  private waitMs(res: Dispatcher.ResponseData, attempt: number): number {
    const seconds = retryAfterSeconds(flatHeaders(res.headers)) ?? 2 ** (attempt - 1);
    return Math.min(seconds, 60) * this.timing.backoffMs;
  }
}

/** A 2xx body as text, refused past MAX_JSON_BODY (declared or counted) rather than held whole. */
async function readBounded(res: Dispatcher.ResponseData, what: string): Promise<string> {
  const tooLarge = () => {
    res.body.destroy();
    return new CliError(`${what}: the gateway's answer is larger than ${MAX_JSON_BODY / 1024 / 1024} MiB; not reading it`, EXIT.failure);
  };
  if (Number(res.headers['content-length']) > MAX_JSON_BODY) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_JSON_BODY) throw tooLarge();
      chunks.push(chunk as Buffer);
    }
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`${what}: the answer was cut short (${(e as { code?: string }).code ?? (e as Error).message})`, EXIT.failure);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function flatHeaders(h: Dispatcher.ResponseData['headers']): Headers {
  const out: Headers = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** The gateway's error body as one line: "404 not_found: No video ... (code)". */
async function apiError(method: string, path: string, res: Dispatcher.ResponseData): Promise<CliError> {
  let text = '';
  try {
    for await (const chunk of res.body) {
      text += String(chunk);
      if (text.length > MAX_ERROR_BODY) break;
    }
  } catch {
    // The error body is a courtesy; the status alone decides the exit code.
  }
  res.body.destroy();
  let message = `${method} ${path.split('?')[0]} answered HTTP ${res.statusCode}`;
  try {
    const e = (JSON.parse(text) as { error?: { type?: string; message?: string; code?: string } }).error;
    if (e?.message) message = `${res.statusCode} ${e.type ?? 'error'}: ${e.message}${e.code ? ` (${e.code})` : ''}`;
  } catch {
    // Not the spec's shape (a proxy in between, say): keep the status line.
  }
  return new CliError(message, exitCodeForStatus(res.statusCode));
}
