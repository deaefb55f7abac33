import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { preloadSimTokenizers, simTokenCounter, simTokens, simVector } from '../../../sim/vectors.js';

/**
 * Vertex AI `:predict` for text-embedding models and `:embedContent` for the Gemini Embedding 2 models
 * (which have no `:predict`) on loopback, with Google's error envelope.
 * Checks the Bearer token, refuses more than one instance for gemini-embedding-001 with Vertex's own
 * message, honours `task_type`, `title`, `outputDimensionality` and `autoTruncate`, and writes
 * `statistics.token_count` as a float (`7.0`) on every other answer, as Vertex sometimes does.
 * Settings: `floatTokenCounts` ('always' | 'never' | 'alternate', default alternate).
 */
export const VERTEX_SIM_TOKEN = 'ya29.sim-vertex-token';
export const VERTEX_SIM_PROJECT = 'sim-project';

export const VERTEX_SIM_MODELS: Readonly<Record<string, { dims: number; maxInstances: number; method?: 'embedContent' }>> = {
  'text-embedding-005': { dims: 768, maxInstances: 250 },
  'text-embedding-004': { dims: 768, maxInstances: 250 },
  'text-multilingual-embedding-002': { dims: 768, maxInstances: 250 },
  'gemini-embedding-001': { dims: 3072, maxInstances: 1 },
  'gemini-embedding-2-preview': { dims: 3072, maxInstances: 1, method: 'embedContent' },
};

const TASK_TYPES = new Set([
  'RETRIEVAL_QUERY',
  'RETRIEVAL_DOCUMENT',
  'SEMANTIC_SIMILARITY',
  'CLASSIFICATION',
  'CLUSTERING',
  'QUESTION_ANSWERING',
  'FACT_VERIFICATION',
  'CODE_RETRIEVAL_QUERY',
]);
const MAX_INPUT_TOKENS = 2048;
const MODEL_METHOD = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):(predict|embedContent)$/;

/** The vector the simulator returns: task type and title shape it, as they do on Vertex. */
export function vertexSimVector(model: string, content: string, taskType?: string, title?: string, dims?: number): Float32Array {
  const native = VERTEX_SIM_MODELS[model]?.dims ?? 768;
  return simVector(model, `${taskType ?? ''}\u0001${title ?? ''}\u0001${content}`, native, dims ?? native);
}

export async function startVertexSimulator(opts: { apiKey?: string; port?: number } = {}): Promise<SimServer> {
  preloadSimTokenizers();
  const token = opts.apiKey ?? VERTEX_SIM_TOKEN;
  let answers = 0;
  return SimServer.start(
    'vertex-embeddings',
    (req, sim) => {
      // Google checks the token before routing: a wrong token is a 401 on any path, as on Vertex.
      if (bearer(req) !== token)
        return gerror(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token.');
      const m = MODEL_METHOD.exec(req.path);
      if (req.method !== 'POST' || !m) return gerror(404, 'NOT_FOUND', `The requested URL ${req.path} was not found on this server.`);
      const model = decodeURIComponent(m[3]!);
      const spec = VERTEX_SIM_MODELS[model];
      if (spec && (spec.method ?? 'predict') !== m[4])
        return gerror(400, 'FAILED_PRECONDITION', `Publisher model ${model} does not support the ${m[4]} method; use ${spec.method ?? 'predict'}.`);
      if (m[4] === 'embedContent') return embedContent(req, model);
      const reply = predict(req, model);
      if (reply.status !== undefined || reply.body === undefined) return reply;
      const mode = (sim.settings['floatTokenCounts'] as string | undefined) ?? 'alternate';
      const asFloat = mode === 'always' || (mode === 'alternate' && answers++ % 2 === 1);
      const text = asFloat ? String(reply.body).replace(/"token_count":(\d+)(?=[,}])/g, '"token_count":$1.0') : reply.body;
      return { headers: { 'content-type': 'application/json; charset=UTF-8' }, body: text };
    },
    { port: opts.port, settings: { apiKey: token } },
  );
}

function predict(req: SimRequest, model: string): SimReply {
  const spec = VERTEX_SIM_MODELS[model];
  if (!spec) return gerror(404, 'NOT_FOUND', `Publisher Model \`${model}\` was not found or your project does not have access to it.`);
  const body = req.json;
  const instances = body?.instances;
  if (!Array.isArray(instances) || instances.length === 0) return gerror(400, 'INVALID_ARGUMENT', 'Invalid JSON payload: instances is required.');
  if (instances.length > spec.maxInstances) {
    if (spec.maxInstances === 1)
      return gerror(
        400,
        'INVALID_ARGUMENT',
        'Unable to submit request because it included too many instances. Reduce the number of instances and try again. ' +
          `Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings: Unable to submit request because batchSize must be 1 but the entered value was ${instances.length}. Update the batchSize value and try again.`,
      );
    return gerror(400, 'INVALID_ARGUMENT', `${spec.maxInstances} instance(s) is allowed per prediction. Actual: ${instances.length}`);
  }
  const params = body.parameters ?? {};
  let dims = spec.dims;
  if (params.outputDimensionality !== undefined) {
    const d = params.outputDimensionality;
    if (!Number.isInteger(d) || d < 1 || d > spec.dims)
      return gerror(400, 'INVALID_ARGUMENT', `Unsupported outputDimensionality ${String(d)}; must be between 1 and ${spec.dims}.`);
    dims = d;
  }
  const autoTruncate = params.autoTruncate !== false;
  const predictions = [];
  let chars = 0;
  const counter = simTokenCounter();
  for (const inst of instances) {
    const content = inst?.content;
    if (typeof content !== 'string') return gerror(400, 'INVALID_ARGUMENT', 'Each instance needs a string `content`.');
    const taskType = inst.task_type;
    if (taskType !== undefined && !TASK_TYPES.has(taskType))
      return gerror(400, 'INVALID_ARGUMENT', `Unsupported task_type ${String(taskType)}.`);
    if (inst.title !== undefined && taskType !== 'RETRIEVAL_DOCUMENT')
      return gerror(400, 'INVALID_ARGUMENT', 'title is only supported with task_type RETRIEVAL_DOCUMENT.');
    let tokens = simTokens(content, counter);
    const truncated = tokens > MAX_INPUT_TOKENS;
    if (truncated && !autoTruncate)
      return gerror(400, 'INVALID_ARGUMENT', `Input of ${tokens} tokens exceeds the limit of ${MAX_INPUT_TOKENS}; enable autoTruncate.`);
    if (truncated) tokens = MAX_INPUT_TOKENS;
    chars += content.length;
    const values = Array.from(vertexSimVector(model, content, taskType, inst.title, dims));
    predictions.push({ embeddings: { values, statistics: { token_count: tokens, truncated } } });
  }
  return { body: JSON.stringify({ predictions, metadata: { billableCharacterCount: chars } }) };
}

/** One content per call; usage in `usageMetadata.promptTokenCount`, as the REST reference describes. */
function embedContent(req: SimRequest, model: string): SimReply {
  const spec = VERTEX_SIM_MODELS[model];
  if (!spec) return gerror(404, 'NOT_FOUND', `Publisher Model \`${model}\` was not found or your project does not have access to it.`);
  const body = req.json ?? {};
  const parts = body.content?.parts;
  if (!Array.isArray(parts) || parts.length === 0) return gerror(400, 'INVALID_ARGUMENT', 'Invalid JSON payload: content.parts is required.');
  const text = parts.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
  const taskType = body.taskType;
  if (taskType !== undefined && !TASK_TYPES.has(taskType)) return gerror(400, 'INVALID_ARGUMENT', `Unsupported taskType ${String(taskType)}.`);
  let dims = spec.dims;
  if (body.outputDimensionality !== undefined) {
    const d = body.outputDimensionality;
    if (!Number.isInteger(d) || d < 1 || d > spec.dims)
      return gerror(400, 'INVALID_ARGUMENT', `Unsupported outputDimensionality ${String(d)}; must be between 1 and ${spec.dims}.`);
    dims = d;
  }
  let tokens = simTokens(text, simTokenCounter());
  const truncated = tokens > MAX_INPUT_TOKENS;
  if (truncated && body.autoTruncate === false)
    return gerror(400, 'INVALID_ARGUMENT', `Input of ${tokens} tokens exceeds the limit of ${MAX_INPUT_TOKENS}; enable autoTruncate.`);
  if (truncated) tokens = MAX_INPUT_TOKENS;
  const values = Array.from(vertexSimVector(model, text, taskType, body.title, dims));
  return { json: { embedding: { values }, usageMetadata: { promptTokenCount: tokens, totalTokenCount: tokens }, truncated } };
}

function gerror(code: number, status: string, message: string): SimReply {
  return { status: code, json: { error: { code, message, status } } };
}
