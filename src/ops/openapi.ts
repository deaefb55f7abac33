import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { clientJson } from '../core/lossless-json.js';
import type { OperationDoc } from './openapi-operations.js';

type Obj = Record<string, any>;

/**
 * Error codes by status, as docs/errors.md lists them (test/ops/openapi.test.ts keeps the two equal).
 * Each error response of the document names its codes.
 */
export const ERROR_CODES: Record<number, string[]> = {
  400: ['invalid_parameter', 'missing_required_parameter', 'invalid_json', 'invalid_body', 'forbidden_key', 'input_in_extra_body', 'extra_body_too_large', 'malformed_request',
    'invalid_content_length', 'bad_request', 'request_too_large', 'unsupported_input_type', 'media_location_not_allowed', 'too_deep', 'too_many_media',
    'unsupported_media_type', 'unsupported_parameter', 'size_conflict', 'model_not_supported', 'input_too_long', 'invalid_media',
    'content_policy_violation', 'upstream_rejected', 'video_not_ready', 'already_exists', 'already_revoked', 'ambiguous_key', 'expectation_failed',
    'invalid_cursor', 'remix_unsupported', 'operation_unsupported', 'unsupported_input_reference', 'too_many_files', 'too_many_fields', 'unknown_parameter',
    'invalid_webhook_url', 'too_many_endpoints', 'already_disabled', 'repeated_parameter'],
  401: ['invalid_api_key', 'invalid_callback_signature'],
  402: ['insufficient_quota', 'key_budget_exceeded'],
  403: ['permission_denied', 'csrf_token_invalid'],
  404: ['model_not_found', 'not_found', 'route_not_found', 'video_not_found', 'video_expired', 'account_not_found', 'key_not_found',
    'variant_unavailable', 'upload_not_found', 'file_not_found', 'character_not_found', 'webhook_not_found', 'callback_not_found', 'upstream_rejected'],
  408: ['request_timeout'],
  409: ['idempotency_key_in_use'],
  413: ['body_too_large', 'upload_too_large', 'storage_quota_exceeded', 'upstream_rejected'],
  416: ['range_not_satisfiable'],
  422: ['unprocessable_parameter', 'upstream_rejected', 'idempotency_key_reused'],
  429: ['rate_limit_exceeded'],
  500: ['internal_error', 'thumbnail_failed'],
  502: ['upstream_error', 'upstream_answer_too_large'],
  503: ['upstream_unavailable', 'overloaded', 'shutting_down', 'store_unavailable', 'job_busy'],
  504: ['upstream_timeout', 'thumbnail_timeout'],
};

/**
 * What the document says about each operation, and the component schemas (zod-to-json-schema
 * conversions of the request schemas): loaded by the first request for the document, since a
 * serving gateway may never be asked for it.
 */
interface Descriptions {
  operations: Record<string, OperationDoc>;
  componentSchemas: Record<string, unknown>;
}
let descriptions: Descriptions | undefined;
let loading: Promise<void> | undefined;
function loadDescriptions(): Promise<void> {
  return (loading ??= Promise.all([import('./openapi-operations.js'), import('./openapi-schemas.js')]).then(([o, s]) => {
    descriptions = { operations: o.OPERATIONS, componentSchemas: s.componentSchemas };
  }));
}

const REQUEST_ID = { $ref: '#/components/headers/RequestId' };
const IDEMPOTENCY_KEY =
  "Optional; 1-255 printable ASCII characters, kept 24 h per account. A repeat with the same key and the same request (endpoint, fields, file) creates nothing, holds and charges nothing and counts against no rate limit: it answers the job first made, as it is now, with Idempotent-Replayed: true. While the first is still processed: 409 idempotency_key_in_use (Retry-After: 1). The key with another endpoint or other fields: 422 idempotency_key_reused. A request that failed leaves the key free for its retry.";
const REPLAYED = { description: 'true when the answer repeats an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } };

/** components/responses: one per error status, its codes in the description and as examples. */
function errorResponses(): Obj {
  const out: Obj = {};
  for (const [status, codes] of Object.entries(ERROR_CODES)) {
    const examples: Obj = {};
    for (const code of codes) examples[code] = { value: { error: { type: '…', message: '…', code } } };
    out[`Error${status}`] = {
      description: `Error. Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
      headers: { 'x-request-id': REQUEST_ID, ...(status === '429' || status === '409' ? { 'retry-after': { schema: { type: 'integer' }, description: 'Seconds to wait.' } } : {}) },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples } },
    };
  }
  return out;
}

/** `/v1/videos/{id}` (OpenAPI) to `/v1/videos/:id` (Fastify), to find the operation's entry. */
const toRoute = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

function describe(path: string, method: string, doc: OperationDoc): Obj {
  const op: Obj = {
    operationId: `${method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: doc.summary,
    tags: [doc.tag],
    responses: {},
  };
  if (doc.description) op.description = doc.description;
  const auth = doc.auth ?? 'key';
  op.security = auth === 'none' ? [] : [{ [auth === 'admin' ? 'adminToken' : 'apiKey']: [] }];
  const params: Obj[] = [];
  for (const m of path.matchAll(/\{([^}]+)\}/g)) params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
  for (const [name, schema] of Object.entries(doc.query ?? {})) params.push({ name, in: 'query', required: false, schema });
  params.push({ name: 'x-request-id', in: 'header', required: false, description: 'Your own request id (kept when sane).', schema: { type: 'string', maxLength: 128 } });
  if (doc.idempotent) params.push({ name: 'Idempotency-Key', in: 'header', required: false, description: IDEMPOTENCY_KEY, schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' } });
  op.parameters = params;
  if (doc.body) op.requestBody = { required: true, content: { 'application/json': { schema: doc.body } } };
  const ok: Obj = { description: doc.success.description, headers: { 'x-request-id': REQUEST_ID, ...(doc.idempotent ? { 'idempotent-replayed': REPLAYED } : {}) } };
  if (doc.success.content) ok.content = Object.fromEntries(Object.entries(doc.success.content).map(([type, schema]) => [type, { schema }]));
  op.responses[String(doc.success.status)] = ok;
  for (const [status, r] of Object.entries(doc.other ?? {})) op.responses[status] = { headers: { 'x-request-id': REQUEST_ID }, ...r };
  const statuses = doc.idempotent ? [...new Set([...doc.errors, 409, 422])].sort((a, b) => a - b) : doc.errors;
  for (const status of statuses) op.responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
  return op;
}

/**
 * `GET /openapi.json` (OpenAPI 3.1) and the `/docs` reference page (Swagger UI, served from the
 * npm package's own files: nothing is loaded from a CDN). Paths come from the routes actually
 * registered; what each says comes from OPERATIONS.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Video & Embeddings Gateway',
        version: '1',
        description: 'One API in front of many video-generation and embeddings vendors. Errors: docs/errors.md.',
      },
      tags: [
        { name: 'videos', description: 'Asynchronous video generation' },
        { name: 'files', description: 'Files (OpenAI Files API) a video create takes as input_reference {file_id}' },
        { name: 'embeddings', description: 'Text and multimodal embeddings' },
        { name: 'chat', description: 'Chat completions' },
        { name: 'models', description: 'Models the key may use' },
        { name: 'usage', description: "The calling key's spend and budget" },
        { name: 'admin', description: 'Accounts, keys, ledger (admin token)' },
        { name: 'operations', description: 'Probes, metrics and this document' },
      ],
    },
    transformObject: (documents) => {
      // Every route that serves the document loads the descriptions first (the handler below, the
      // docs page's hooks); a document built without them would lack every summary.
      if (!descriptions) throw new Error('OpenAPI descriptions are not loaded');
      const { operations, componentSchemas } = descriptions;
      const doc = (documents as { openapiObject: Obj }).openapiObject;
      for (const [path, item] of Object.entries<Obj>(doc.paths ?? {})) {
        for (const method of Object.keys(item)) {
          const entry = operations[`${method.toUpperCase()} ${toRoute(path)}`];
          // Undocumented routes stay bare (no summary): the OpenAPI test names them.
          if (entry) item[method] = describe(path, method, entry);
        }
      }
      doc.components = {
        ...(doc.components ?? {}),
        schemas: { ...(doc.components?.schemas ?? {}), ...componentSchemas },
        responses: errorResponses(),
        headers: { RequestId: { description: "The request's id: yours when you sent a sane one, else a new one.", schema: { type: 'string' } } },
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: Authorization: Bearer sk-gw-…' },
          adminToken: { type: 'http', scheme: 'bearer', description: 'The admin token.' },
        },
      };
      return doc;
    },
  });
  // The document cannot change once the app is serving (no route is added after start), and writing
  // its ~100 KB anew took a millisecond of CPU on every anonymous request: its text is made once per
  // app, by the serializer every other answer goes through, so the bytes are the ones it made before.
  let jsonText: string | undefined;
  const documentText = () => (jsonText ??= clientJson(app.swagger()));
  const sendDocument = (reply: FastifyReply) => reply.type('application/json; charset=utf-8').send(documentText());
  app.get('/openapi.json', async (_req, reply) => {
    await loadDescriptions();
    return sendDocument(reply.header('cache-control', 'no-cache'));
  });
  // The docs page's copy (/docs/json) from the same text. Its YAML (/docs/yaml) is kept by
  // @fastify/swagger itself once made (fastify.swagger({ yaml: true }) caches its string).
  app.addHook('onRoute', (route) => {
    if (route.url === '/docs/json') route.handler = (_req, reply) => sendDocument(reply);
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    // The page shares the console's origin: the same framing refusal, and scripts only from the
    // gateway (the plugin hashes its own inline parts). Its default CSP would upgrade every request
    // to https, which breaks a gateway served over plain http, and would allow a validator host.
    staticCSP: true,
    transformStaticCSP: docsCsp,
    // The page's routes include /docs/json and /docs/yaml, which build the document.
    uiHooks: {
      onRequest: (_req, reply, done) => {
        reply.headers({ 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' });
        void loadDescriptions().then(() => done(), done);
      },
    },
  });
}
/** The docs page's CSP: the plugin's own scripts only, never framed, nothing fetched from elsewhere, plain http allowed. */
export function docsCsp(header: string): string {
  return header
    .split(';')
    .map((d) => d.trim())
    .filter((d) => d !== '' && d !== 'upgrade-insecure-requests')
    .map((d) => {
      if (d.startsWith('frame-ancestors')) return "frame-ancestors 'none'";
      // Swagger UI sets style attributes from its scripts, which no hash can cover; styles cannot run code.
      if (d.startsWith('style-src')) return "style-src 'self' 'unsafe-inline'";
      return d.replace(/ validator\.swagger\.io/g, '').replace(/ https:/g, '');
    })
    .join('; ');
}

// Not encapsulated (what fastify-plugin does): the swagger plugin must see routes registered by the
// app's other plugins, not only those inside this one.
(registerOpenApi as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
