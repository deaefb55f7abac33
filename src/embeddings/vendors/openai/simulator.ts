import { randomUUID } from 'node:crypto';
import { handleChatCompletions } from '../../../sim/openai-chat.js';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { floatsToBase64 } from '../../vectors.js';
import { preloadSimTokenizers, simTokenCounter, simTokens, simVector } from '../../../sim/vectors.js';

/**
 * An OpenAI-compatible upstream on loopback: `POST /v1/embeddings` (Bearer), Azure's
 * `/openai/deployments/{deployment}/embeddings?api-version=` and `/openai/v1/embeddings` (`api-key`),
 * `GET /v1/models`, and `POST /v1/chat/completions` through the chat simulator's handler (src/chat).
 *
 * Settings (sim.settings): `maxBatch` (refuse larger inputs like a smaller server would),
 * `ignoreEncodingFormat` (always answer floats), `shuffle` (answer items out of order),
 * `extraTokensPerInput` (report more tokens than cl100k counts), `deployments` (Azure deployment -> model),
 * `modelEcho` (answer this `model` instead of the one asked).
 */
export const OPENAI_SIM_KEY = 'sk-sim-openai';

export const OPENAI_SIM_MODELS: Readonly<Record<string, { dims: number; shortenable: boolean }>> = {
  'text-embedding-3-small': { dims: 1536, shortenable: true },
  'text-embedding-3-large': { dims: 3072, shortenable: true },
  'text-embedding-ada-002': { dims: 1536, shortenable: false },
};

export async function startOpenAISimulator(opts: { apiKey?: string; port?: number } = {}): Promise<SimServer> {
  preloadSimTokenizers(true);
  const key = opts.apiKey ?? OPENAI_SIM_KEY;
  return SimServer.start(
    'openai-embeddings',
    (req, sim) => {
      if (req.method === 'GET' && req.path === '/v1/models') return authorized(req, key, 'bearer') ?? listModels();
      if (req.method !== 'POST') return notFound();
      if (req.path === '/v1/chat/completions') return authorized(req, key, 'bearer') ?? handleChatCompletions(req, sim);
      if (req.path === '/v1/embeddings') return authorized(req, key, 'bearer') ?? embeddings(req, sim, undefined);
      if (req.path === '/openai/v1/embeddings') return authorized(req, key, 'api-key') ?? embeddings(req, sim, undefined);
      const m = /^\/openai\/deployments\/([^/]+)\/embeddings$/.exec(req.path);
      if (m) {
        if (!req.query.get('api-version')) return error(404, 'Resource not found', 'invalid_request_error', null, '404');
        const deployment = decodeURIComponent(m[1]!);
        const model = (sim.settings['deployments'] as Record<string, string> | undefined)?.[deployment] ?? deployment;
        return authorized(req, key, 'api-key') ?? embeddings(req, sim, model);
      }
      return notFound();
    },
    { port: opts.port, settings: { apiKey: key } },
  );
}

async function embeddings(req: SimRequest, sim: SimServer, deploymentModel: string | undefined): Promise<SimReply> {
  const body = req.json;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return error(400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null, null);
  const model = deploymentModel ?? body.model;
  if (typeof model !== 'string') return error(400, 'you must provide a model parameter', 'invalid_request_error', null, null);
  const spec = OPENAI_SIM_MODELS[model];
  if (!spec)
    return error(404, `The model \`${model}\` does not exist or you do not have access to it.`, 'invalid_request_error', null, 'model_not_found');

  const inputs = normaliseInput(body.input);
  if (typeof inputs === 'string') return error(400, inputs, 'invalid_request_error', 'input', null);
  const maxBatch = typeof sim.settings['maxBatch'] === 'number' ? sim.settings['maxBatch'] : 2048;
  if (inputs.length > maxBatch)
    return error(400, `'$.input' is invalid: too many items (${inputs.length} > ${maxBatch}).`, 'invalid_request_error', 'input', null);

  const fmt = body.encoding_format ?? 'float';
  if (fmt !== 'float' && fmt !== 'base64')
    return error(400, `Invalid value for 'encoding_format': ${String(fmt)}.`, 'invalid_request_error', 'encoding_format', null);
  let dims = spec.dims;
  if (body.dimensions !== undefined) {
    if (!spec.shortenable) return error(400, 'This model does not support specifying dimensions.', 'invalid_request_error', 'dimensions', null);
    if (!Number.isInteger(body.dimensions) || body.dimensions < 1 || body.dimensions > spec.dims)
      return error(400, `Invalid value for 'dimensions' = ${String(body.dimensions)}.`, 'invalid_request_error', 'dimensions', null);
    dims = body.dimensions;
  }

  const asBase64 = fmt === 'base64' && !sim.settings['ignoreEncodingFormat'];
  const extra = typeof sim.settings['extraTokensPerInput'] === 'number' ? sim.settings['extraTokensPerInput'] : 0;
  let tokens = 0;
  const counter = simTokenCounter();
  // Built as text a few vectors per turn: the embedded default runs this in the gateway's process,
  // where one pass over 2,048 inputs (count, vectors, JSON) would hold the loop for a second.
  const items: string[] = new Array(inputs.length);
  for (let index = 0; index < inputs.length; index++) {
    if (index > 0 && index % 64 === 0) await new Promise((r) => setImmediate(r));
    const input = inputs[index]!;
    tokens += simTokens(input, counter) + extra;
    const v = simVector(model, input, spec.dims, dims);
    items[index] = JSON.stringify({ object: 'embedding', index, embedding: asBase64 ? floatsToBase64(v) : Array.from(v) });
  }
  if (sim.settings['shuffle']) items.reverse();
  const echoed = typeof sim.settings['modelEcho'] === 'string' ? sim.settings['modelEcho'] : model;
  const usage = JSON.stringify({ prompt_tokens: tokens, total_tokens: tokens });
  return {
    headers: { 'x-request-id': `req_${randomUUID().replace(/-/g, '')}`, 'openai-model': echoed, 'content-type': 'application/json' },
    body: `{"object":"list","data":[${items.join(',')}],"model":${JSON.stringify(echoed)},"usage":${usage}}`,
  };
}

/** The input list, or an error message. Mirrors OpenAI's accepted forms. */
function normaliseInput(input: unknown): (string | number[])[] | string {
  if (typeof input === 'string') return input === '' ? "'$.input' is invalid: empty string." : [input];
  if (!Array.isArray(input) || input.length === 0) return "'$.input' is invalid.";
  if (input.every((t) => Number.isInteger(t))) return [input as number[]];
  for (const item of input) {
    if (typeof item === 'string' && item !== '') continue;
    if (Array.isArray(item) && item.length > 0 && item.every((t) => Number.isInteger(t))) continue;
    return "'$.input' is invalid: items must be non-empty strings or token arrays.";
  }
  return input as (string | number[])[];
}

function listModels(): SimReply {
  const ids = [...Object.keys(OPENAI_SIM_MODELS), 'gpt-4o-mini'];
  return { json: { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'openai' })) } };
}

function authorized(req: SimRequest, key: string, how: 'bearer' | 'api-key'): SimReply | undefined {
  const got = how === 'bearer' ? bearer(req) : req.headers['api-key'];
  if (got === key) return undefined;
  if (how === 'api-key')
    return { status: 401, json: { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } } };
  return error(401, 'Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key');
}

function notFound(): SimReply {
  return error(404, 'Unknown request URL.', 'invalid_request_error', null, 'unknown_url');
}

function error(status: number, message: string, type: string, param: string | null, code: string | null): SimReply {
  return { status, json: { error: { message, type, param, code } } };
}
