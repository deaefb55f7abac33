import fc from 'fast-check';
import { request, type Agent, type ClientRequest } from 'node:http';

/**
 * Hostile HTTP requests for property-based fuzzing of every public and admin endpoint: random and
 * mutated JSON bodies, headers, paths, ids, query strings and content types. Shared by the bounded
 * fuzz test in the suite and by `npm run fuzz` (long runs against a child process).
 */
export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body?: string;
}

/** What the generator needs to know about a running gateway to aim at real objects. */
export interface FuzzTargets {
  key: string;
  otherKey: string;
  adminToken: string;
  /** Ids of real jobs (the caller's and another account's). */
  videoIds: string[];
  /** A video, an embedding and a chat model first (the body templates use them in that order), then any. */
  models: string[];
  accounts: string[];
  keyIds: string[];
}

/** Percent-encodes, with lone surrogates (which have no UTF-8 form) sent as an invalid byte. */
const enc = (s: string) => s.split(/([\ud800-\udfff])/).map((p) => (/^[\ud800-\udfff]$/.test(p) ? '%FF' : encodeURIComponent(p))).join('');

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'multipart/form-data',
  'application/octet-stream',
  'application/json, text/plain',
  '',
  '*/*',
  'application/vnd.api+json',
];

/** Text that tends to break parsers and validators. */
const nasty = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '..',
    '../../etc/passwd',
    '%00',
    '%zz',
    '%',
    '\u0000',
    '\ud800',
    '__proto__',
    'constructor',
    'prototype',
    '<script>alert(1)</script>',
    "' OR 1=1 --",
    '${ENV}',
    'NaN',
    '-1',
    '1e309',
    '9007199254740993',
    'a'.repeat(5000),
    '😀'.repeat(50),
    'null',
    'true',
    '[fail]',
    '[moderation]',
    'http://169.254.169.254/latest/meta-data',
    'file:///etc/passwd',
  ),
);

const jsonLeaf = fc.oneof(
  nasty,
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1, 2048, 2049, 1e300, -0, Number.MAX_SAFE_INTEGER),
  fc.boolean(),
  fc.constant(null),
);
const jsonValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    jsonLeaf,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'model', 'input')), tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** Realistic bodies per endpoint family, to be mutated (valid shapes reach deeper code). */
function templates(t: FuzzTargets): Record<string, () => Record<string, unknown>> {
  const m = (i: number) => t.models[i % t.models.length] ?? 'm';
  return {
    video: () => ({ model: m(0), prompt: 'a red fox', seconds: 4, size: '1280x720' }),
    embeddings: () => ({ model: m(1), input: ['hello', 'world'], encoding_format: 'float', dimensions: 8 }),
    chat: () => ({ model: m(2), messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream: false }),
    account: () => ({ name: 'fuzz', balance: 1, upstreams: null }),
    key: () => ({ account: t.accounts[0] ?? 'demo', models: ['*'], actions: ['video'], expires: '30d' }),
    topup: () => ({ amount: 1, note: 'x' }),
  };
}

/** A body: a template with fields replaced, removed or added; random JSON; or garbage text. */
function bodyFor(t: FuzzTargets, kind: string): fc.Arbitrary<string | undefined> {
  const tpl = templates(t)[kind];
  const mutated = tpl
    ? fc
        .tuple(
          fc.array(fc.tuple(fc.constantFrom(...Object.keys(tpl()), 'extra', '__proto__', 'constructor', 'extra_body', 'stream'), fc.option(jsonValue, { nil: undefined })), { maxLength: 3 }),
          fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, fc.constantFrom(...t.models, 'nope', '')),
        )
        .map(([edits, model]) => {
          const b: Record<string, unknown> = tpl();
          if (model !== undefined) b.model = model;
          for (const [k, v] of edits) {
            if (v === undefined) delete b[k];
            else Object.defineProperty(b, k, { value: v, enumerable: true, configurable: true, writable: true });
          }
          return JSON.stringify(b);
        })
    : fc.constant(undefined);
  return fc.oneof(
    { weight: 5, arbitrary: mutated },
    { weight: 2, arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 200 }).map((n) => '['.repeat(n) + ']'.repeat(n)) },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '{"model":', '{"__proto__":{"x":1}}', '{"a":1,"a":2}', 'null', '{}', '\u0000') },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/** Path segments for ids: real ones, tampered real ones, or junk. */
function idFor(pool: string[]): fc.Arbitrary<string> {
  const real = pool.length > 0 ? fc.constantFrom(...pool) : fc.constant('x');
  const tampered = fc.tuple(real, fc.nat(), fc.constantFrom('A', '_', '-', '')).map(([id, i, c]) => {
    const at = id.length === 0 ? 0 : i % id.length;
    return id.slice(0, at) + c + id.slice(at + 1);
  });
  return fc.oneof(real, tampered, nasty.map((s) => enc(s)), nasty.filter((s) => !/[/?#\s]/.test(s)));
}

const query = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.tuple(fc.constantFrom('index', 'limit', 'account', 'signature', 'expires', 'variant', 'after', 'x', '__proto__'), nasty), { maxLength: 3 })
      .map((kv) => '?' + kv.map(([k, v]) => `${k}=${enc(v)}`).join('&')),
  },
  { weight: 1, arbitrary: nasty.map((s) => '?' + s.replace(/#/g, '')) },
  // A repeated parameter parses to an array (a fuzzing run found a route passing one on unchecked).
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('index', 'limit', 'account', 'signature', 'expires', 'from', 'to', 'format'), nasty, nasty)
      .map(([k, a, b]) => `?${k}=${enc(a)}&${k}=${enc(b)}`),
  },
);

export function fuzzRequest(t: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const video = idFor(t.videoIds);
  const routes: fc.Arbitrary<{ method: string; path: string; kind: string; admin: boolean }>[] = [
    fc.constant({ method: 'GET', path: '/health', kind: '', admin: false }),
    fc.constant({ method: 'GET', path: '/v1/models', kind: '', admin: false }),
    idFor(t.models).map((id) => ({ method: 'GET', path: `/v1/models/${id}`, kind: '', admin: false })),
    fc.constant({ method: 'POST', path: '/v1/videos/generations', kind: 'video', admin: false }),
    fc.constant({ method: 'POST', path: '/v1/videos', kind: 'video', admin: false }),
    fc.constant({ method: 'GET', path: '/v1/videos', kind: '', admin: false }),
    video.map((id) => ({ method: 'GET', path: `/v1/videos/${id}`, kind: '', admin: false })),
    video.map((id) => ({ method: 'DELETE', path: `/v1/videos/${id}`, kind: '', admin: false })),
    video.map((id) => ({ method: 'GET', path: `/v1/videos/${id}/content`, kind: '', admin: false })),
    video.map((id) => ({ method: 'POST', path: `/v1/videos/${id}/remix`, kind: 'video', admin: false })),
    fc.constant({ method: 'POST', path: '/v1/embeddings', kind: 'embeddings', admin: false }),
    fc.constant({ method: 'POST', path: '/v1/chat/completions', kind: 'chat', admin: false }),
    fc.constant({ method: 'GET', path: '/v1/usage', kind: '', admin: false }),
    fc.constant({ method: 'GET', path: '/admin/accounts', kind: '', admin: true }),
    fc.constant({ method: 'POST', path: '/admin/accounts', kind: 'account', admin: true }),
    idFor(t.accounts).map((a) => ({ method: 'GET', path: `/admin/accounts/${a}`, kind: '', admin: true })),
    idFor(t.accounts).map((a) => ({ method: 'POST', path: `/admin/accounts/${a}/topup`, kind: 'topup', admin: true })),
    idFor(t.accounts).map((a) => ({ method: 'GET', path: `/admin/accounts/${a}/ledger`, kind: '', admin: true })),
    fc.constant({ method: 'GET', path: '/admin/keys', kind: '', admin: true }),
    fc.constant({ method: 'POST', path: '/admin/keys', kind: 'key', admin: true }),
    idFor(t.keyIds).map((k) => ({ method: 'POST', path: `/admin/keys/${k}/revoke`, kind: '', admin: true })),
    fc.constant({ method: 'GET', path: '/admin/reconcile', kind: '', admin: true }),
    nasty.map((s) => ({ method: 'GET', path: `/${s.replace(/[/?#]/g, '')}`, kind: '', admin: false })),
  ];
  return fc.oneof(...routes).chain((r) =>
    fc
      .record({
        method: fc.oneof({ weight: 6, arbitrary: fc.constant(r.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
        query,
        auth: fc.oneof(
          { weight: 6, arbitrary: fc.constant(r.admin ? `Bearer ${t.adminToken}` : `Bearer ${t.key}`) },
          { weight: 1, arbitrary: fc.constant(`Bearer ${r.admin ? t.key : t.otherKey}`) },
          { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
          { weight: 1, arbitrary: nasty.map((s) => `Bearer ${s.replace(/[^\x20-\x7e]/g, '')}`) },
          { weight: 1, arbitrary: fc.constant([`Bearer ${t.key}`, `Bearer ${t.otherKey}`]) },
        ),
        contentType: fc.oneof({ weight: 6, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
        extra: fc.dictionary(
          fc.constantFrom('range', 'x-request-id', 'accept', 'accept-encoding', 'content-encoding', 'expect', 'idempotency-key', 'x-forwarded-for', 'origin'),
          nasty.map((s) => s.replace(/[^\x20-\x7e]/g, '').slice(0, 200)),
          { maxKeys: 2 },
        ),
        body: bodyFor(t, r.kind),
      })
      .map(({ method, query: q, auth, contentType, extra, body }) => {
        const headers: Record<string, string | string[]> = { ...extra };
        if (auth !== undefined) headers.authorization = typeof auth === 'string' ? auth : [...auth];
        // Bodies only where HTTP allows them; the client library refuses a body on GET/HEAD.
        const sendBody = body !== undefined && method !== 'GET' && method !== 'HEAD';
        if (sendBody && contentType !== '') headers['content-type'] = contentType;
        // Asking for a content encoding the body does not have is its own test, only with a body.
        if (!sendBody) delete headers['content-encoding'];
        return { method, path: r.path + q, headers, body: sendBody ? body : undefined };
      }),
  );
}

/** Why an answer breaks the contract, or undefined when it keeps it. */
export function contractViolation(req: FuzzRequest, status: number, body: string): string | undefined {
  if (status >= 500) return `status ${status}`;
  if (status < 400 || req.method === 'HEAD') return undefined;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return `error body is not JSON: ${body.slice(0, 200)}`;
  }
  const e = (json as { error?: Record<string, unknown> })?.error;
  if (!e || Object.keys(json as object).length !== 1) return `error body is not {"error":{...}}: ${body.slice(0, 200)}`;
  if (typeof e.type !== 'string' || typeof e.message !== 'string') return `error without type/message: ${body.slice(0, 200)}`;
  for (const k of ['code', 'param'] as const) if (e[k] !== undefined && e[k] !== null && typeof e[k] !== 'string') return `error.${k} is not a string`;
  if (/\bat .+:\d+:\d+\)?/.test(body) || /node_modules|\/src\//.test(body)) return `error body leaks internals: ${body.slice(0, 200)}`;
  return undefined;
}

/** Sends one fuzzed request over real HTTP; resolves with what came back (status 0: no answer). */
export function sendFuzz(base: string, req: FuzzRequest, agent: Agent, timeoutMs = 30_000): Promise<{ status: number; body: string }> {
  // Characters a request line cannot carry are sent percent-encoded, as any client would.
  const path = req.path.replace(/[^\x21-\x7e]/gu, (c) => {
    try {
      return encodeURIComponent(c);
    } catch {
      return '%FF'; // a lone surrogate has no UTF-8 form: send an invalid byte instead
    }
  });
  return new Promise((resolve) => {
    let settled = false;
    const done = (status: number, body: string) => {
      if (!settled) resolve({ status, body });
      settled = true;
    };
    let r: ClientRequest;
    try {
      r = request(base + path, { method: req.method, headers: req.headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', () => done(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
        res.on('end', () => done(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
      });
    } catch (e) {
      // The client library refused to send it (e.g. a header it considers invalid): nothing to judge.
      return done(-1, (e as Error).message);
    }
    r.setTimeout(timeoutMs, () => r.destroy(new Error('timeout')));
    r.on('error', (e) => done(0, e.message));
    r.end(req.body);
  });
}
