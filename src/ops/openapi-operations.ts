import { zodToJsonSchema } from 'zod-to-json-schema';
import type { ZodType } from 'zod';
import { KEY_LIST_DEFAULT_LIMIT, KEY_LIST_MAX_LIMIT } from '../admin/service.js';
import { adminSchemas } from '../routes/admin.js';
import { webhookEndpointSchema } from '../routes/webhooks.js';
import { ref } from './openapi-schemas.js';
import { CONSOLE_OPERATIONS, JOB_FILTERS, LEDGER_FILTERS } from './openapi-console.js';
import { DERIVE_OPERATIONS } from './openapi-derive.js';

type Schema = Record<string, unknown>;

/**
 * What the document says about one route. A route registered without an entry here shows up in
 * /openapi.json without a summary, and test/ops/openapi.test.ts fails naming it: add it here.
 */
export interface OperationDoc {
  summary: string;
  tag: 'videos' | 'files' | 'embeddings' | 'chat' | 'models' | 'usage' | 'admin' | 'operations';
  description?: string;
  /** Who may call it: an API key (default), the admin token, or anyone. */
  auth?: 'key' | 'admin' | 'none';
  body?: Schema;
  query?: Record<string, Schema>;
  /** The success answer: status, description, and the body by media type. */
  success: { status: number; description: string; content?: Record<string, Schema> };
  /** Other non-error answers (a 206 partial content, a 503 readiness body). */
  other?: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
  /** Error statuses the route can answer with (each documented with its codes from docs/errors.md). */
  errors: number[];
  /** Takes an Idempotency-Key header (routes/idempotency.ts): documented with its 409 and 422. */
  idempotent?: boolean;
}

const json = (schema: Schema) => ({ 'application/json': schema });

/** An admin body schema, generated from the zod schema that validates it. */
function fromZod(schema: ZodType): Schema {
  const { $schema: _drop, ...rest } = zodToJsonSchema(schema, { $refStrategy: 'none' }) as Schema;
  return rest;
}

const KEY_ERRORS = [400, 401, 403, 404, 408, 413, 429, 500];
const UPSTREAM_ERRORS = [402, 422, 502, 503, 504];
const ADMIN_ERRORS = [400, 401, 404, 413, 429, 500];
const RANGE = {
  from: { type: 'string', description: 'ISO date or time; default the start of the current UTC month.' },
  to: { type: 'string', description: 'ISO date (inclusive) or time; default the end of today (UTC).' },
};
const keyUsage: OperationDoc = {
  summary: "The calling key's spend, balance and budget",
  tag: 'usage',
  description: 'Any valid key may read its own usage, never another key\'s. Amounts in currency units.',
  query: RANGE,
  success: { status: 200, description: 'The key usage object.', content: json({ type: 'object', properties: { object: { const: 'key_usage' }, data: { type: 'object', additionalProperties: true } } }) },
  errors: [400, 401, 408, 500],
};
/** The FileObject of OpenAI's Files API. */
const FILE_OBJECT: Schema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    object: { const: 'file' },
    bytes: { type: 'integer' },
    created_at: { type: 'integer' },
    expires_at: { type: 'integer' },
    filename: { type: 'string' },
    purpose: { type: 'string' },
    status: { const: 'processed' },
  },
};
const list = (item: string) => json({ type: 'object', properties: { data: { type: 'array', items: ref(item) } } });

/** Keyed by `METHOD /fastify/route/:param`. */
export const OPERATIONS: Record<string, OperationDoc> = {
  ...CONSOLE_OPERATIONS,
  ...DERIVE_OPERATIONS,
  'POST /v1/videos/generations': {
    summary: 'Create a video job',
    tag: 'videos',
    description: 'Holds the estimated cost, creates the upstream task with failover and answers at once with status processing.',
    body: ref('VideoCreateRequest'),
    success: { status: 200, description: 'The job, processing.', content: json(ref('VideoJob')) },
    errors: [...KEY_ERRORS, ...UPSTREAM_ERRORS],
    idempotent: true,
  },
  'GET /v1/videos/:id': {
    summary: 'Get a video job',
    tag: 'videos',
    description: 'Poll every 5-10 s: processing, then completed (with output_url) or failed (with error).',
    success: { status: 200, description: 'The job.', content: json(ref('VideoJob')) },
    errors: [...KEY_ERRORS, 502, 503, 504],
  },
  'POST /callbacks/video/:token': {
    summary: 'Vendor callback into the gateway',
    tag: 'videos',
    auth: 'none',
    description:
      'Called by a vendor when a task finishes, on the per-job URL the gateway registered. The body content is not used: the job is refreshed from the vendor (at most once a second per job). A vendor that signs its callbacks (fal: X-Fal-Webhook-* headers, ED25519) must send a valid signature, else 401 and nothing happens.',
    success: { status: 200, description: 'Received.', content: json({ type: 'object', properties: { received: { const: true } } }) },
    errors: [400, 401, 404, 413, 500, 503],
  },
  'GET /v1/videos/:id/content': {
    summary: 'Download a finished video',
    tag: 'videos',
    description: 'Streams the MP4; honours Range (206, 416). Works with an API key or as the signed output_url.',
    query: {
      index: { type: 'integer', minimum: 0, maximum: 16, description: 'Which video of a multi-video job.' },
      variant: { type: 'string', enum: ['video', 'thumbnail', 'spritesheet'], description: "A preview image instead of the MP4: the vendor's where it makes one; a thumbnail is otherwise a JPEG frame the gateway extracts (ffmpeg)." },
      expires: { type: 'string', description: 'Part of a signed output_url.' },
      signature: { type: 'string', description: 'Part of a signed output_url.' },
    },
    success: { status: 200, description: 'The video bytes.', content: { 'video/mp4': { type: 'string', contentMediaType: 'video/mp4' } } },
    other: { 206: { description: 'The range asked for (Content-Range says which).', content: { 'video/mp4': { schema: { type: 'string', contentMediaType: 'video/mp4' } } } } },
    errors: [...KEY_ERRORS, 416, 502, 503, 504],
  },
  'POST /v1/videos': {
    summary: 'Create a video (OpenAI Videos API)',
    tag: 'videos',
    description:
      'JSON or multipart/form-data as the official SDKs send it: model, prompt, seconds (string), size, input_reference (an image file, a video file for models whose capabilities say video_reference, {image_url}, {file_id} of a file uploaded to /v1/files, or a URL); other fields are native. Answers in the OpenAI video shape (queued).',
    body: ref('OpenAiVideoCreateRequest'),
    success: { status: 200, description: 'The video, queued.', content: json(ref('OpenAiVideo')) },
    errors: [...KEY_ERRORS, ...UPSTREAM_ERRORS],
    idempotent: true,
  },
  'GET /v1/videos': {
    summary: "List the account's videos",
    tag: 'videos',
    description: 'Newest first by default; each job in the dialect it was created in. `after` is a video id: pages stay stable while new jobs arrive.',
    query: {
      after: { type: 'string', description: 'The id of the last video of the previous page.' },
      limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Page size (default 20).' },
      order: { type: 'string', enum: ['asc', 'desc'], description: 'By creation time (default desc).' },
      ...JOB_FILTERS,
    },
    success: {
      status: 200,
      description: 'One page.',
      content: json({
        type: 'object',
        properties: {
          object: { const: 'list' },
          data: { type: 'array', items: { anyOf: [ref('OpenAiVideo'), ref('VideoJob')] } },
          first_id: { type: ['string', 'null'] },
          last_id: { type: ['string', 'null'] },
          has_more: { type: 'boolean' },
        },
      }),
    },
    errors: [400, 401, 403, 408, 429, 500],
  },
  'DELETE /v1/videos/:id': {
    summary: 'Delete a video (cancelling it upstream if still running)',
    tag: 'videos',
    description:
      'A running job is cancelled where the vendor can (hold released, nothing charged); the job disappears from reads and lists at once, and what the gateway stored for it is removed. ' +
      'Before a cancel the vendor is asked for the task: one that finished is settled and billed. While another request polls the job from its vendor the delete waits for that poll, and answers 503 job_busy (Retry-After) if it outlasts min(video.lease_ms + 0.5 s, 15 s).',
    success: {
      status: 200,
      description: 'Deleted.',
      content: json({ type: 'object', properties: { id: { type: 'string' }, object: { const: 'video.deleted' }, deleted: { const: true } } }),
    },
    errors: [400, 401, 403, 404, 408, 429, 500, 503],
  },
  'POST /v1/videos/:id/remix': {
    summary: 'Remix a completed video with a new prompt',
    tag: 'videos',
    description: 'Where the vendor remixes (Sora on OpenAI or Azure); billed like a create; elsewhere 400 remix_unsupported.',
    body: { type: 'object', required: ['prompt'], properties: { prompt: { type: 'string' } }, additionalProperties: false },
    success: { status: 200, description: 'The new video, queued.', content: json(ref('OpenAiVideo')) },
    errors: [...KEY_ERRORS, ...UPSTREAM_ERRORS],
    idempotent: true,
  },
  'GET /uploads/:account/:file': {
    summary: 'An uploaded input, for the vendor that fetches it',
    tag: 'videos',
    auth: 'none',
    description: 'Only through the signed, expiring link the gateway hands to the vendor; no API key can read an upload.',
    query: { expires: { type: 'string' }, signature: { type: 'string' } },
    success: { status: 200, description: 'The uploaded image or video.', content: { 'image/*': { type: 'string' }, 'video/*': { type: 'string' } } },
    errors: [404, 500],
  },
  'POST /v1/files': {
    summary: 'Upload a file (OpenAI Files API)',
    tag: 'files',
    description:
      "multipart/form-data: file, purpose (assistants, batch, fine-tune, vision, user_data, evals), optional expires_after[anchor]=created_at and expires_after[seconds] (3600-2592000). The file belongs to the caller's account; a video create takes it as input_reference {file_id}. Each upload counts against the video rate limit (429); one the account's storage quota has no room for is refused with 413 storage_quota_exceeded. Storage is not billed: a zero balance does not stop an upload.",
    success: { status: 200, description: 'The file object.', content: json(FILE_OBJECT) },
    errors: [400, 401, 403, 408, 413, 429, 500, 503],
  },
  'GET /v1/files': {
    summary: "List the account's files",
    tag: 'files',
    description: 'Newest first by default; `after` is a file id.',
    query: {
      after: { type: 'string', description: 'The id of the last file of the previous page.' },
      limit: { type: 'integer', minimum: 1, maximum: 10000, description: 'Page size (default 20).' },
      order: { type: 'string', enum: ['asc', 'desc'] },
      purpose: { type: 'string', description: 'Only files of this purpose.' },
    },
    success: {
      status: 200,
      description: 'One page.',
      content: json({
        type: 'object',
        properties: { object: { const: 'list' }, data: { type: 'array', items: FILE_OBJECT }, first_id: { type: ['string', 'null'] }, last_id: { type: ['string', 'null'] }, has_more: { type: 'boolean' } },
      }),
    },
    errors: [400, 401, 403, 408, 429, 500],
  },
  'GET /v1/files/:id': {
    summary: 'Get a file',
    tag: 'files',
    success: { status: 200, description: 'The file object.', content: json(FILE_OBJECT) },
    errors: [400, 401, 403, 404, 408, 429, 500],
  },
  'DELETE /v1/files/:id': {
    summary: 'Delete a file',
    tag: 'files',
    description: 'Removes the file and its bytes. Videos created from it keep their own copy.',
    success: {
      status: 200,
      description: 'Deleted.',
      content: json({ type: 'object', properties: { id: { type: 'string' }, object: { const: 'file' }, deleted: { const: true } } }),
    },
    errors: [400, 401, 403, 404, 408, 429, 500],
  },
  'GET /v1/files/:id/content': {
    summary: "Download a file's bytes",
    tag: 'files',
    success: { status: 200, description: 'The bytes, with the content type sniffed at upload.', content: { 'application/octet-stream': { type: 'string' } } },
    errors: [400, 401, 403, 404, 408, 429, 500],
  },
  'POST /v1/embeddings': {
    summary: 'Create embeddings',
    tag: 'embeddings',
    description: 'OpenAI-compatible; float or base64 vectors; Vertex task_type/title and multimodal input_type.',
    body: ref('EmbeddingsRequest'),
    success: { status: 200, description: 'The vectors, in input order.', content: json(ref('EmbeddingsResponse')) },
    errors: [...KEY_ERRORS, ...UPSTREAM_ERRORS],
  },
  'POST /v1/chat/completions': {
    summary: 'Create a chat completion',
    tag: 'chat',
    description: 'OpenAI-compatible, streaming (server-sent events) or not.',
    body: ref('ChatRequest'),
    success: {
      status: 200,
      description: 'The completion, or its events when stream is true.',
      content: { ...json(ref('ChatCompletion')), 'text/event-stream': { type: 'string' } },
    },
    errors: [...KEY_ERRORS, ...UPSTREAM_ERRORS],
  },
  'GET /v1/models': {
    summary: 'List the models this key may use',
    tag: 'models',
    success: { status: 200, description: 'The models.', content: json(ref('ModelList')) },
    errors: [401, 403, 408, 429, 500],
  },
  'GET /v1/models/:id': {
    summary: 'Get one model',
    tag: 'models',
    success: { status: 200, description: 'The model.', content: json(ref('Model')) },
    errors: [401, 403, 404, 408, 500],
  },
  'GET /v1/usage': keyUsage,
  'GET /v1/key': { ...keyUsage, summary: 'The calling key (alias of /v1/usage)' },
  'GET /admin/usage': {
    summary: 'Usage report by day, model or key',
    tag: 'admin',
    auth: 'admin',
    query: {
      ...RANGE,
      account: { type: 'string', description: 'Account name.' },
      key: { type: 'string', description: 'Key id or prefix.' },
      model: { type: 'string' },
      group_by: { type: 'string', enum: ['day', 'model', 'key'] },
      format: { type: 'string', enum: ['json', 'csv'], description: 'Or send Accept: text/csv.' },
    },
    success: {
      status: 200,
      description: 'The report.',
      content: { ...json({ type: 'object', properties: { object: { const: 'usage_report' }, data: { type: 'array', items: { type: 'object' } } } }), 'text/csv': { type: 'string' } },
    },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/accounts': { summary: 'List accounts', tag: 'admin', auth: 'admin', success: { status: 200, description: 'Accounts.', content: list('Account') }, errors: ADMIN_ERRORS },
  'POST /admin/accounts': {
    summary: 'Create an account',
    tag: 'admin',
    auth: 'admin',
    body: fromZod(adminSchemas.account),
    success: { status: 201, description: 'The account.', content: json(ref('Account')) },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/accounts/:name': { summary: 'Get an account', tag: 'admin', auth: 'admin', success: { status: 200, description: 'The account.', content: json(ref('Account')) }, errors: ADMIN_ERRORS },
  'POST /admin/accounts/:name/topup': {
    summary: 'Top up an account',
    tag: 'admin',
    auth: 'admin',
    body: fromZod(adminSchemas.topup),
    success: { status: 200, description: 'The account after the credit.', content: json(ref('Account')) },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/accounts/:name/ledger': {
    summary: "An account's ledger, newest first",
    tag: 'admin',
    auth: 'admin',
    query: LEDGER_FILTERS,
    success: { status: 200, description: 'Ledger entries.', content: list('LedgerEntry') },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/keys': {
    summary: 'List API keys',
    tag: 'admin',
    auth: 'admin',
    description: 'Oldest first by default, in pages. `after` is a key id: pages stay stable while new keys are created.',
    query: {
      account: { type: 'string', description: 'Account name: only its keys.' },
      after: { type: 'string', description: 'The id of the last key of the previous page (`last_id`).' },
      limit: { type: 'integer', minimum: 1, maximum: KEY_LIST_MAX_LIMIT, description: `Page size (default ${KEY_LIST_DEFAULT_LIMIT}).` },
      order: { type: 'string', enum: ['asc', 'desc'], description: 'By creation time (default asc).' },
    },
    success: {
      status: 200,
      description: 'One page of key records (never the keys themselves).',
      content: json({
        type: 'object',
        properties: {
          object: { const: 'list' },
          data: { type: 'array', items: ref('Key') },
          first_id: { type: ['string', 'null'] },
          last_id: { type: ['string', 'null'] },
          has_more: { type: 'boolean' },
        },
      }),
    },
    errors: ADMIN_ERRORS,
  },
  'POST /admin/keys': {
    summary: 'Create an API key',
    tag: 'admin',
    auth: 'admin',
    body: fromZod(adminSchemas.key),
    success: { status: 201, description: 'The key record and, once, the key.', content: json(ref('Key')) },
    errors: ADMIN_ERRORS,
  },
  'POST /admin/keys/:id/revoke': { summary: 'Revoke an API key', tag: 'admin', auth: 'admin', success: { status: 200, description: 'The revoked key.', content: json(ref('Key')) }, errors: ADMIN_ERRORS },
  'PUT /admin/keys/:id/budget': {
    summary: "Set or clear an API key's budget",
    tag: 'admin',
    auth: 'admin',
    description: 'A total and/or a per-UTC-day or per-month limit, in currency units; null clears one.',
    body: fromZod(adminSchemas.budget),
    success: { status: 200, description: 'The key with its budget.', content: json(ref('Key')) },
    errors: ADMIN_ERRORS,
  },
  'POST /admin/webhooks': {
    summary: 'Register a webhook endpoint',
    tag: 'admin',
    auth: 'admin',
    description: 'Events: video.completed, video.failed, video.cancelled (default: all). The whsec_ secret is in this answer only. See docs/webhooks.md.',
    body: fromZod(webhookEndpointSchema),
    success: { status: 201, description: 'The endpoint, with its secret shown once.', content: json({ type: 'object', additionalProperties: true }) },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/webhooks': {
    summary: 'List webhook endpoints',
    tag: 'admin',
    auth: 'admin',
    query: { account: { type: 'string' } },
    success: { status: 200, description: 'Endpoints (never their secrets).', content: json({ type: 'object', properties: { data: { type: 'array', items: { type: 'object' } } } }) },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/webhooks/:id': { summary: 'Get a webhook endpoint', tag: 'admin', auth: 'admin', success: { status: 200, description: 'The endpoint.', content: json({ type: 'object', additionalProperties: true }) }, errors: ADMIN_ERRORS },
  'DELETE /admin/webhooks/:id': { summary: 'Disable a webhook endpoint', tag: 'admin', auth: 'admin', success: { status: 200, description: 'The disabled endpoint.', content: json({ type: 'object', additionalProperties: true }) }, errors: ADMIN_ERRORS },
  'GET /admin/webhooks/:id/deliveries': {
    summary: "A webhook endpoint's delivery log",
    tag: 'admin',
    auth: 'admin',
    query: { limit: { type: 'integer', minimum: 1, maximum: 1000 } },
    success: {
      status: 200,
      description: 'Each event (state, attempts) and every attempt (status, error, latency), newest first.',
      content: json({ type: 'object', properties: { data: { type: 'array', items: { type: 'object' } }, attempts: { type: 'array', items: { type: 'object' } } } }),
    },
    errors: ADMIN_ERRORS,
  },
  'GET /admin/reconcile': {
    summary: 'Creates that may have reached an upstream unanswered',
    tag: 'admin',
    auth: 'admin',
    success: { status: 200, description: 'Records to reconcile with the vendors.', content: json({ type: 'object', properties: { data: { type: 'array', items: { type: 'object' } } } }) },
    errors: ADMIN_ERRORS,
  },
  'GET /': {
    summary: 'Index: name, version, where the documentation is, links',
    tag: 'operations',
    auth: 'none',
    success: { status: 200, description: 'A small JSON index.', content: json({ type: 'object', properties: { name: { type: 'string' }, version: { type: 'string' }, links: { type: 'object' } } }) },
    errors: [],
  },
  'GET /health': { summary: 'Liveness', tag: 'operations', auth: 'none', success: { status: 200, description: 'The process is up.', content: json({ type: 'object', properties: { status: { const: 'ok' } } }) }, errors: [] },
  'GET /ready': {
    summary: 'Readiness: store, migrations, Redis, shutdown',
    tag: 'operations',
    auth: 'none',
    description: '503 with the same body when any check fails (on SQLite, also while another process holds the write lock), and at once when shutdown begins.',
    success: { status: 200, description: 'Every check passed.', content: json(ref('Readiness')) },
    other: { 503: { description: 'A check failed, or the gateway is shutting down.', content: { 'application/json': { schema: ref('Readiness') } } } },
    errors: [],
  },
  'GET /metrics': {
    summary: 'Prometheus metrics',
    tag: 'operations',
    auth: 'admin',
    description: 'Prometheus text format. On the main port it needs the admin token; with metrics.port it is served there instead, without one.',
    success: { status: 200, description: 'Every metric.', content: { 'text/plain': { type: 'string' } } },
    errors: [401],
  },
  'GET /openapi.json': {
    summary: 'This document',
    tag: 'operations',
    auth: 'none',
    success: { status: 200, description: 'OpenAPI 3.1.', content: json({ type: 'object' }) },
    errors: [],
  },
};
