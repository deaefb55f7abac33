import { zodToJsonSchema } from 'zod-to-json-schema';
import { accountPatchSchema } from '../routes/admin-console.js';
import type { OperationDoc } from './openapi-operations.js';
import { ref } from './openapi-schemas.js';

type Schema = Record<string, unknown>;
const json = (schema: Schema) => ({ 'application/json': schema });
const obj = { type: 'object', additionalProperties: true };
const ADMIN_ERRORS = [400, 401, 403, 404, 413, 500];

/** Filters of the job lists (GET /v1/videos and GET /admin/jobs). */
export const JOB_FILTERS: Record<string, Schema> = {
  status: { type: 'string', enum: ['processing', 'completed', 'failed', 'queued', 'in_progress'], description: 'queued and in_progress mean processing.' },
  model: { type: 'string', description: 'Exact model name.' },
  from: { type: 'string', description: 'Created at or after: YYYY-MM-DD (UTC) or ISO 8601.' },
  to: { type: 'string', description: 'Created before: ISO 8601, or YYYY-MM-DD (that whole day included).' },
};

export const LEDGER_FILTERS: Record<string, Schema> = {
  limit: { type: 'integer', minimum: 1, maximum: 1000 },
  kind: { type: 'string', enum: ['credit', 'hold', 'release', 'capture', 'charge'] },
  model: { type: 'string' },
  from: { type: 'string', description: 'YYYY-MM-DD (UTC) or ISO 8601.' },
  to: { type: 'string', description: 'ISO 8601, or YYYY-MM-DD (that whole day included).' },
  before: { type: 'integer', description: 'Entries with an id below this one (the next page).' },
};

const { $schema: _drop, ...accountPatch } = zodToJsonSchema(accountPatchSchema, { $refStrategy: 'none' }) as Schema;
const session = json({
  type: 'object',
  properties: { object: { const: 'console_session' }, role: { enum: ['operator', 'key'] }, label: { type: 'string' }, csrf_token: { type: 'string' }, expires_at: { type: 'string' } },
});

/** The console's page and session routes, and the admin routes it is built on. */
export const CONSOLE_OPERATIONS: Record<string, OperationDoc> = {
  'GET /console': {
    summary: 'The web console (HTML page)',
    tag: 'operations',
    auth: 'none',
    description: 'A single page that signs in with the admin token or an API key and then uses only /v1 and /admin. See docs/console.md.',
    success: { status: 200, description: 'The page.', content: { 'text/html': { type: 'string' } } },
    other: { 503: { description: 'The console bundle was not built (npm run build).' } },
    errors: [],
  },
  'GET /console/assets/:file': {
    summary: "The console's scripts and styles",
    tag: 'operations',
    auth: 'none',
    description: 'Content-hashed names, cached for a year (immutable).',
    success: { status: 200, description: 'The file.', content: { 'text/javascript': { type: 'string' }, 'text/css': { type: 'string' } } },
    other: { 304: { description: 'Not modified (If-None-Match).' } },
    errors: [404],
  },
  'POST /console/session': {
    summary: 'Sign in to the console',
    tag: 'operations',
    auth: 'none',
    description:
      'Body {"token"}: the admin token (operator) or an API key (its holder). Sets an HttpOnly, SameSite=Strict session cookie that then authenticates /admin (operator) or /v1 (key holder); writes through it need the answer\'s csrf_token in x-csrf-token. Wrong credentials are rate-limited per client address; a body that is not application/json is refused (400) and a sign-in sent from another site (Sec-Fetch-Site) is refused (403), neither counted.',
    body: { type: 'object', required: ['token'], properties: { token: { type: 'string', maxLength: 512 } }, additionalProperties: false },
    success: { status: 200, description: 'The session (the cookie is in Set-Cookie).', content: session },
    errors: [400, 401, 403, 429, 500],
  },
  'GET /console/session': {
    summary: 'The current console session',
    tag: 'operations',
    auth: 'none',
    description: 'Who the session cookie signs in as, and its CSRF token.',
    success: { status: 200, description: 'The session.', content: session },
    errors: [401],
  },
  'DELETE /console/session': {
    summary: 'Sign out of the console',
    tag: 'operations',
    auth: 'none',
    description: 'Ends the session at once and clears the cookie (x-csrf-token required while the session is live).',
    success: { status: 200, description: 'Signed out.', content: json({ type: 'object', properties: { signed_out: { const: true } } }) },
    errors: [403],
  },
  'PATCH /admin/accounts/:name': {
    summary: "Change an account's upstreams or rate limits",
    tag: 'admin',
    auth: 'admin',
    description: 'upstreams: names, or null for every upstream. The balance changes only by top-ups and charges.',
    body: accountPatch,
    success: { status: 200, description: 'The account.', content: json(ref('Account')) },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/jobs': {
    summary: "Every account's video jobs, newest first",
    tag: 'admin',
    auth: 'admin',
    description: 'The spec job object plus account_id, key_id, upstream, hold and cost. `after` is a video id.',
    query: {
      account: { type: 'string', description: 'Account name.' },
      after: { type: 'string', description: 'The id of the last video of the previous page.' },
      limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Page size (default 20).' },
      ...JOB_FILTERS,
    },
    success: { status: 200, description: 'One page.', content: json({ type: 'object', properties: { data: { type: 'array', items: obj }, has_more: { type: 'boolean' }, last_id: { type: ['string', 'null'] } } }) },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/jobs/:id': {
    summary: 'One video job of any account',
    tag: 'admin',
    auth: 'admin',
    success: { status: 200, description: 'The job, with a signed output_url once completed.', content: json(obj) },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/upstreams': {
    summary: 'Upstream health: circuit state, calls, latency, recent failures',
    tag: 'admin',
    auth: 'admin',
    description: 'Calls by outcome since start, latency percentiles of the last 200 calls, the last 20 failures (time and outcome), per upstream of this instance.',
    success: { status: 200, description: 'Every configured upstream.', content: json({ type: 'object', properties: { data: { type: 'array', items: obj } } }) },
    errors: [401, 500],
  },
};
