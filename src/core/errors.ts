/**
 * The one error type of the gateway. Every failure a client can see is a GatewayError,
 * rendered by `renderError` into the spec's shape: {"error":{"type","message","code"?,"param"?}}.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'insufficient_quota'
  | 'permission_denied'
  | 'not_found'
  | 'request_timeout'
  | 'rate_limit_error'
  | 'server_error';

export interface ErrorBody {
  error: { type: ErrorType; message: string; code?: string; param?: string };
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code?: string;
  readonly param?: string;
  /** Extra response headers, e.g. Retry-After on 429. */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    type: ErrorType,
    message: string,
    opts: { code?: string; param?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'GatewayError';
    this.status = status;
    this.type = type;
    this.code = opts.code;
    this.param = opts.param;
    this.headers = opts.headers ?? {};
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { type: this.type, message: this.message };
    if (this.code !== undefined) error.code = this.code;
    if (this.param !== undefined) error.param = this.param;
    return { error };
  }
}

/** The catalogue: each constructor is one row of docs/errors.md (kept in sync by a test). */
export const errors = {
  invalidRequest: (message: string, param?: string, code = 'invalid_parameter') =>
    new GatewayError(400, 'invalid_request_error', message, { code, param }),
  invalidJson: (message: string) =>
    new GatewayError(400, 'invalid_request_error', message, { code: 'invalid_json' }),
  foreignParameter: (param: string, owner: string, model: string) =>
    new GatewayError(
      400,
      'invalid_request_error',
      `Parameter '${param}' belongs to the ${owner} vendor and is not accepted by model '${model}'.`,
      { code: 'unsupported_parameter', param },
    ),
  sizeConflict: (message: string, param: string) =>
    new GatewayError(400, 'invalid_request_error', message, { code: 'size_conflict', param }),
  contentPolicy: (message: string) =>
    new GatewayError(400, 'invalid_request_error', message, { code: 'content_policy_violation' }),
  upstreamRejected: (message: string, param?: string, code = 'upstream_rejected') =>
    new GatewayError(400, 'invalid_request_error', message, { code, param }),
  unauthenticated: (message = 'Missing or invalid API key.') =>
    new GatewayError(401, 'authentication_error', message, { code: 'invalid_api_key' }),
  /** A vendor callback whose signature is missing, stale or does not verify against the vendor's keys. */
  invalidCallbackSignature: (message = 'The callback signature is missing, stale or does not verify.') =>
    new GatewayError(401, 'authentication_error', message, { code: 'invalid_callback_signature' }),
  insufficientQuota: (message = 'Insufficient balance for this request.') =>
    new GatewayError(402, 'insufficient_quota', message, { code: 'insufficient_quota' }),
  /** The key's own budget (not the account's balance) is what ran out. */
  keyBudgetExceeded: (message = "This request would exceed the API key's budget.") =>
    new GatewayError(402, 'insufficient_quota', message, { code: 'key_budget_exceeded' }),
  permissionDenied: (message: string, param?: string) =>
    new GatewayError(403, 'permission_denied', message, { code: 'permission_denied', param }),
  /** A write through a console session cookie without the session's CSRF token (x-csrf-token). */
  csrfRejected: () =>
    new GatewayError(403, 'permission_denied', 'A write through a console session needs the x-csrf-token header of that session.', { code: 'csrf_token_invalid' }),
  modelNotFound: (model: string) =>
    new GatewayError(404, 'not_found', `The model '${model}' does not exist.`, {
      code: 'model_not_found',
      param: 'model',
    }),
  notFound: (message = 'Resource not found.', code = 'not_found') =>
    new GatewayError(404, 'not_found', message, { code }),
  requestTimeout: (message = 'The request took too long; long jobs should use the asynchronous flow.') =>
    new GatewayError(408, 'request_timeout', message, { code: 'request_timeout' }),
  videoNotReady: (status: string) =>
    new GatewayError(400, 'invalid_request_error', `The video is not available: the job is ${status}.`, {
      code: 'video_not_ready',
    }),
  bodyTooLarge: (limit: number) =>
    new GatewayError(413, 'invalid_request_error', `Request body exceeds the limit of ${limit} bytes.`, {
      code: 'body_too_large',
    }),
  /** 400 rather than HTTP's 417: the spec's statuses (7.2) do not include 417. */
  expectationFailed: () =>
    new GatewayError(400, 'invalid_request_error', "The only 'Expect' the gateway meets is '100-continue'.", { code: 'expectation_failed' }),
  uploadTooLarge: (limit: number, param = 'input_reference') =>
    new GatewayError(413, 'invalid_request_error', `The uploaded file exceeds the limit of ${limit} bytes.`, {
      code: 'upload_too_large',
      param,
    }),
  /** A Files API upload that the account's storage quota (bytes or number of files) has no room for. */
  storageQuotaExceeded: (message: string) =>
    new GatewayError(413, 'invalid_request_error', message, { code: 'storage_quota_exceeded', param: 'file' }),
  /** What reading a multipart body failed on (no boundary, a malformed part, no closing boundary) is the client's mistake. */
  unreadableForm: () =>
    new GatewayError(400, 'invalid_request_error', 'The request body is not a readable multipart form (check the boundary in Content-Type, and that the form ends with its closing boundary).', {
      code: 'invalid_body',
    }),
  rangeNotSatisfiable: (size: number) =>
    new GatewayError(416, 'invalid_request_error', 'The requested range is not satisfiable.', {
      code: 'range_not_satisfiable',
      headers: { 'content-range': `bytes */${size}` },
    }),
  unprocessable: (message: string, param?: string) =>
    new GatewayError(422, 'invalid_request_error', message, { code: 'unprocessable_parameter', param }),
  /** A repeat of a request whose Idempotency-Key is still being processed (routes/idempotency.ts): retry shortly. */
  idempotencyKeyInUse: (message = 'A request with this Idempotency-Key is still being processed; retry shortly.') =>
    new GatewayError(409, 'invalid_request_error', message, { code: 'idempotency_key_in_use', param: 'Idempotency-Key', headers: { 'retry-after': '1' } }),
  /** An Idempotency-Key already used for another request (another endpoint, or other parameters). */
  idempotencyKeyReused: (message = 'This Idempotency-Key was used for another request (another endpoint or other parameters); use a new key for a new request.') =>
    new GatewayError(422, 'invalid_request_error', message, { code: 'idempotency_key_reused', param: 'Idempotency-Key' }),
  rateLimited: (message: string, retryAfterSeconds: number, headers: Record<string, string> = {}) =>
    new GatewayError(429, 'rate_limit_error', message, {
      code: 'rate_limit_exceeded',
      headers: { ...headers, 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
  internal: (message = 'Internal gateway error.') =>
    new GatewayError(500, 'server_error', message, { code: 'internal_error' }),
  upstreamError: (message = 'The upstream returned an error.') =>
    new GatewayError(502, 'server_error', message, { code: 'upstream_error' }),
  upstreamAnswerTooLarge: () =>
    new GatewayError(502, 'server_error', 'The upstream answered with more data than the gateway accepts for this request (server.max_answer_bytes, or what its embeddings can take); nothing was charged.', {
      code: 'upstream_answer_too_large',
    }),
  upstreamUnavailable: (message = 'No upstream is available for this model right now.') =>
    new GatewayError(503, 'server_error', message, { code: 'upstream_unavailable' }),
  /** Shed load: more request bodies in flight than `server.max_inflight_body_bytes`; retrying soon is expected to work. */
  overloaded: (retryAfterSeconds = 1) =>
    new GatewayError(503, 'server_error', 'The gateway is busy with other requests; retry shortly.', {
      code: 'overloaded',
      headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
  /** The database could not be reached (see StoreUnavailableError); retrying shortly is expected to work. */
  storeUnavailable: (retryAfterSeconds = 1) =>
    new GatewayError(503, 'server_error', 'The gateway cannot reach its database right now; retry shortly.', {
      code: 'store_unavailable',
      headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
  /** A delete of a video job whose vendor poll another request or instance has in flight past the wait (video/service.ts). */
  jobBusy: (retryAfterSeconds = 1) =>
    new GatewayError(503, 'server_error', 'The job is being refreshed from its vendor right now; retry the request shortly.', {
      code: 'job_busy',
      headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
  /** A vendor callback reached an instance that is draining: the vendor retries, or polling settles the job. */
  shuttingDown: (retryAfterSeconds = 5) =>
    new GatewayError(503, 'server_error', 'This gateway instance is shutting down; retry shortly.', {
      code: 'shutting_down',
      headers: { 'retry-after': String(retryAfterSeconds) },
    }),
  /** ffmpeg could not make a thumbnail of a finished video (its own words stay in the log). */
  thumbnailFailed: (message = 'The gateway could not extract a frame from this video.') =>
    new GatewayError(500, 'server_error', message, { code: 'thumbnail_failed' }),
  thumbnailTimeout: (message = 'Making the thumbnail took too long; retry later.') =>
    new GatewayError(504, 'server_error', message, { code: 'thumbnail_timeout' }),
  /** More thumbnails are being made than the configured concurrency and queue allow. */
  thumbnailBusy: (retryAfterSeconds = 2) =>
    new GatewayError(503, 'server_error', 'The gateway is making other thumbnails right now; retry shortly.', {
      code: 'overloaded',
      headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
  upstreamTimeout: (message = 'Timed out waiting for the upstream.') =>
    new GatewayError(504, 'server_error', message, { code: 'upstream_timeout' }),
} as const;

/**
 * The database connection failed (refused, reset, ended by the server mid-transaction): nothing of
 * the statement or transaction it ended was applied. Deliberately not a GatewayError: the store's
 * GatewayErrors are verdicts on one write (its account deleted meanwhile) that the charge queue
 * drops, while this is a moment's outage that it retries. The error renderer answers it with
 * `errors.storeUnavailable()` (503), never the 500 of an unknown failure.
 */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`database unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}

const SQLITE_LOCKED = /^SQLITE_(BUSY|LOCKED)(_|$)/;
/**
 * better-sqlite3's codes (extended ones too: SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED ...) for a
 * database that cannot be written: the disk is full, the file or its filesystem turned read-only,
 * the device fails. Like a lock, it ends the statement with nothing applied.
 */
const SQLITE_CANNOT_WRITE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)(_|$)/;

/**
 * Whether `e` is the database's moment of outage, answered 503 store_unavailable: a lost or refused
 * connection (StoreUnavailableError), SQLite locked by another process past the busy timeout, or
 * SQLite unable to write its files (`isSqliteWriteFailure`). Nothing of the statement or
 * transaction it ended was applied, and a retry may succeed (once the lock or the room is back).
 */
export function isStoreOutage(e: unknown): boolean {
  if (e instanceof StoreUnavailableError) return true;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (SQLITE_LOCKED.test(code) || SQLITE_CANNOT_WRITE.test(code));
}

/** SQLite could not write its files (disk full, read-only, I/O error): what `/ready` reports until a write succeeds again. */
export function isSqliteWriteFailure(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && SQLITE_CANNOT_WRITE.test(code);
}

export function isGatewayError(e: unknown): e is GatewayError {
  return e instanceof GatewayError;
}
