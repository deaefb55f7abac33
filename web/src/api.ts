/**
 * The console's only way to the gateway: fetch on the same origin with the session cookie (HttpOnly,
 * so no script can read it) and, on writes, the session's CSRF token in x-csrf-token. The CSRF token
 * lives in memory only (never localStorage): a reload asks GET /console/session for it again.
 */
export interface ApiErrorBody {
  error?: { type?: string; message?: string; code?: string; param?: string };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

let csrfToken = '';
let onSignedOut: () => void = () => undefined;

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Called when an API call answers 401: the session ended (expired, signed out elsewhere, key revoked). */
export function onSessionLost(fn: () => void): void {
  onSignedOut = fn;
}

export async function api<T>(method: string, path: string, body?: unknown, opts: { quiet401?: boolean } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'The gateway could not be reached.');
  }
  const text = await res.text();
  let data: unknown = undefined;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const e = (data as ApiErrorBody | undefined)?.error;
    if (res.status === 401 && !opts.quiet401) onSignedOut();
    const retry = res.headers.get('retry-after');
    const message = (e?.message ?? `Request failed (${res.status}).`) + (res.status === 429 && retry ? ` Retry in ${retry} s.` : '');
    throw new ApiError(res.status, message, e?.code, e?.param);
  }
  return data as T;
}

/** A query string from the set values only. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
