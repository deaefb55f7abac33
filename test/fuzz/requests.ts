import fc from 'fast-check';
import { request, type Agent, type ClientRequest } from 'node:http';
import { bodyArbitraries, type BodyTargets } from './bodies.js';
import { edit, mutate } from './mutate.js';
import { authVariants, extraHeaders, range } from './headers.js';
import { multipartBody } from './multipart.js';
import { count, routes, type Route } from './routes.js';
import { enc, jsonValue, nasty } from './values.js';

/**
 * Hostile HTTP requests for property-based fuzzing of every public and admin endpoint. Each request
 * is a realistic one for its route with one thing made hostile (the body, anywhere inside it; the
 * query; the headers; the credential; the method; the content type), or, for a share, all at once:
 * a request wrong in every way stops at the first check, one wrong in one way reaches the code
 * behind it. Shared by the bounded fuzz test in the suite and by `npm run fuzz` (long runs against
 * a child process).
 */
export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body?: string | Buffer;
  /**
   * The loopback address to send from. Requests with a wrong credential come from addresses of
   * their own: the admin API counts wrong tokens per address and then refuses even the right one,
   * which would turn the rest of a run into 429s.
   */
  from?: string;
}

/** What the generator needs to know about a running gateway to aim at real objects. */
export interface FuzzTargets extends BodyTargets {
  otherKey: string;
  /** Ids of real jobs (the caller's and another account's). */
  videoIds: string[];
  /** The caller's jobs and files the generator may delete (the others stay for reads and downloads). */
  doomedVideoIds: string[];
  doomedFileIds: string[];
  /** Accounts the generator may reconfigure (never the ones whose keys it sends). */
  victims: string[];
  /** Signed output_url links of finished jobs (path and query), which download without a key. */
  signedPaths: string[];
  /** Ids of webhook endpoints, when the setup could register one. */
  webhookIds: string[];
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'APPLICATION/JSON',
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

/** Generic hostile queries, for any route. */
const hostileQuery = fc.oneof(
  fc
    .array(fc.tuple(fc.constantFrom('index', 'limit', 'account', 'signature', 'expires', 'variant', 'after', 'x', '__proto__', 'order', 'from', 'to'), nasty), { maxLength: 3 })
    .map((kv) => '?' + kv.map(([k, v]) => `${k}=${enc(v)}`).join('&')),
  nasty.map((s) => '?' + s.replace(/#/g, '')),
  // A repeated parameter parses to an array (a fuzzing run found a route passing one on unchecked).
  fc.tuple(fc.constantFrom('index', 'limit', 'account', 'signature', 'expires', 'from', 'to', 'format', 'after'), nasty, nasty).map(([k, a, b]) => `?${k}=${enc(a)}&${k}=${enc(b)}`),
);

/** Bodies any route may get: random JSON, garbage, deep nesting, broken JSON. */
const junkBody = fc.oneof(
  { weight: 2, arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? 'null') },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 200 }).map((n) => '['.repeat(n) + ']'.repeat(n)) },
  { weight: 1, arbitrary: fc.constantFrom('', '{', '{"model":', '{"__proto__":{"x":1}}', '{"a":1,"a":2}', 'null', '{}', '\u0000', '{"model":"x"}garbage') },
);

/** The Files upload's own fields: a purpose, and sometimes an expiry (its two fields together). */
function filesFields(hostile: boolean): fc.Arbitrary<[string, string][]> {
  const purpose = hostile ? fc.oneof(fc.constantFrom('vision', 'user_data', 'assistants', 'batch', ''), nasty) : fc.constantFrom('vision', 'user_data');
  const expiry = hostile
    ? fc.tuple(fc.constantFrom('created_at', 'x', ''), count)
    : fc.tuple(fc.constant('created_at'), fc.constantFrom('3600', '86400', '2592000'));
  return fc
    .tuple(fc.option(purpose, { nil: undefined, freq: hostile ? 3 : 20 }), fc.option(expiry, { nil: undefined, freq: 2 }))
    .map(([p, e]) => [
      ...(p === undefined ? [] : [['purpose', p] as [string, string]]),
      ...(e === undefined ? [] : [['expires_after[anchor]', e[0]] as [string, string], ['expires_after[seconds]', e[1]] as [string, string]]),
    ]);
}

type Focus = 'clean' | 'body' | 'query' | 'headers' | 'auth' | 'method' | 'content-type' | 'chaos';
const FOCI: Focus[] = ['clean', 'body', 'body', 'body', 'body', 'query', 'headers', 'headers', 'auth', 'method', 'content-type', 'chaos', 'chaos'];

/** The request body of a route: realistic, mutated inside, or junk; a form for multipart routes. */
function bodyOf(bodies: ReturnType<typeof bodyArbitraries>, r: Route, focus: Focus): fc.Arbitrary<{ body?: string | Buffer; type?: string }> {
  const json = (b: unknown) => ({ body: JSON.stringify(b) ?? 'null', type: 'application/json' });
  const hostile = focus === 'body' || focus === 'chaos';
  if (r.body?.startsWith('multipart:')) {
    const kind = r.body.slice('multipart:'.length);
    const form =
      kind === 'file'
        ? multipartBody(fc.record({}), 'file', filesFields(hostile), hostile)
        : kind === 'openaiVideo'
          ? multipartBody(bodies.openaiVideo!, 'input_reference', undefined, hostile)
          : multipartBody(bodies[kind]!, 'video', undefined, hostile);
    return form.map((m) => ({ body: m.body, type: m.contentType }));
  }
  const tpl = r.body ? bodies[r.body] : undefined;
  if (r.body === 'callback') return fc.oneof(jsonValue.map(json), fc.uint8Array({ maxLength: 200 }).map((a) => ({ body: Buffer.from(a), type: 'application/octet-stream' })));
  if (!tpl) return hostile ? junkBody.map((body) => ({ body, type: 'application/json' })) : fc.constant({});
  if (!hostile) return tpl.map(json);
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(tpl, fc.array(edit, { minLength: 1, maxLength: 3 })).map(([b, edits]) => json(mutate(b, edits))) },
    { weight: 1, arbitrary: junkBody.map((body) => ({ body, type: 'application/json' })) },
  );
}

const loopback = fc.tuple(fc.integer({ min: 1, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 })).map(([a, b, c]) => `127.${a}.${b}.${c}`);

function requestOf(t: FuzzTargets, bodies: ReturnType<typeof bodyArbitraries>, r: Route, focus: Focus): fc.Arbitrary<FuzzRequest> {
  const right = r.who === 'admin' ? `Bearer ${t.adminToken}` : r.who === 'user' ? `Bearer ${t.key}` : undefined;
  const wrongFor = r.who === 'admin' ? t.key : r.who === 'user' ? t.otherKey : t.key;
  const chaos = focus === 'chaos';
  const anyAuth = authVariants(r.who === 'admin' ? t.adminToken : t.key, wrongFor);
  return fc.record({
    path: r.path,
    method: focus === 'method' || chaos ? fc.constantFrom(...METHODS) : fc.constant(r.method),
    query: focus === 'query' || chaos ? fc.oneof(hostileQuery, r.query ?? hostileQuery) : fc.oneof({ weight: 2, arbitrary: fc.constant('') }, { weight: 1, arbitrary: r.query ?? fc.constant('') }),
    auth: focus === 'auth' || chaos ? anyAuth : fc.constant(right),
    headers: focus === 'headers' || chaos ? extraHeaders : fc.constant({}),
    range: r.content ? fc.option(range, { nil: undefined, freq: focus === 'headers' ? 1 : 3 }) : fc.constant(undefined),
    body: bodyOf(bodies, r, focus),
    type: focus === 'content-type' || chaos ? fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined }) : fc.constant(undefined),
    from: loopback,
  }).map(({ path, method, query, auth, headers: extra, range: rangeHeader, body: b, type, from }) => {
    const headers: Record<string, string | string[]> = { ...extra };
    if (auth !== undefined) headers.authorization = auth;
    if (rangeHeader !== undefined) headers.range = rangeHeader;
    // Bodies only where HTTP allows them; the client library refuses a body on GET/HEAD.
    const sendBody = b.body !== undefined && method !== 'GET' && method !== 'HEAD';
    const contentType = type ?? b.type;
    if (sendBody && contentType !== undefined && contentType !== '') headers['content-type'] = contentType;
    // Asking for a content encoding the body does not have is its own test, only with a body.
    if (!sendBody) delete headers['content-encoding'];
    const guess = r.guessed || (auth !== right && r.who !== 'none');
    return { method, path: path + query, headers, body: sendBody ? b.body : undefined, from: guess ? from : undefined };
  });
}

/** Requests to every route, or with `only` to the routes whose `METHOD name` it matches (e.g. /embeddings|remix/). */
export function fuzzRequest(t: FuzzTargets, only?: RegExp): fc.Arbitrary<FuzzRequest> {
  const bodies = bodyArbitraries(t);
  const chosen = routes(t).filter((r) => !only || only.test(`${r.method} ${r.name}`));
  if (chosen.length === 0) throw new Error(`no route matches ${only}`);
  // Each route's arbitrary for each focus, built once (chain would otherwise rebuild it per request).
  const built = chosen.map((r) => new Map(FOCI.map((f) => [f, requestOf(t, bodies, r, f)])));
  return fc.nat({ max: built.length - 1 }).chain((i) => fc.constantFrom(...FOCI).chain((focus) => built[i]!.get(focus)!));
}

/** Why an answer breaks the contract, or undefined when it keeps it. */
export function contractViolation(req: FuzzRequest, status: number, body: string): string | undefined {
  // The simulators fail a call whose prompt says "[fail]" (an upstream 500): a 502 is the designed answer.
  const failedOnPurpose = status === 502 && body.includes('"upstream_error"') && String(req.body ?? '').includes('[fail]');
  if (status >= 500 && !failedOnPurpose) return `status ${status}`;
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
  if (/\bat .+:\d+:\d+\)?/.test(body) || /node_modules|\/src\/|\/dist\//.test(body)) return `error body leaks internals: ${body.slice(0, 200)}`;
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
  // Node frames a body on GET, DELETE or OPTIONS with neither Content-Length nor chunked encoding:
  // the server then reads it as the next request on the connection, and the kept-alive socket is
  // poisoned for whichever request uses it next. Bytes after a request are covered in regressions.
  const headers = req.body === undefined || 'content-length' in req.headers ? req.headers : { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) };
  // Another loopback address (Linux routes all of 127/8 to lo) on a connection of its own.
  const from = req.from && process.platform === 'linux' ? { localAddress: req.from, agent: false as const } : { agent };
  return new Promise((resolve) => {
    let settled = false;
    const done = (status: number, body: string) => {
      if (!settled) resolve({ status, body });
      settled = true;
    };
    let r: ClientRequest;
    try {
      // The path as it is: a URL object would resolve its dot segments ('/admin/accounts/..').
      const { hostname, port } = new URL(base);
      r = request({ host: hostname, port, path, method: req.method, headers, ...from }, (res) => {
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
