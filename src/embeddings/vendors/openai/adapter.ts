import { errors } from '../../../core/errors.js';
import { deepMerge, isObject, omit, type JsonObject } from '../../../core/json.js';
import type { Upstream, UpstreamResponse, UpstreamVerdict } from '../../../http/types.js';
import { openAiEndpoint, type OpenAiEndpoint } from '../../../protocols/openai/endpoint.js';
import { isModeration, readErrorEnvelope } from '../../../protocols/openai/errors.js';
import { defaultVerdict, trimMessage } from '../../verdicts.js';
import type { Batch, BatchLimits, BatchResult, BuildContext, BuiltCall, EmbeddingVendor, EncodingFormat, Vector } from '../../types.js';

/**
 * Any OpenAI-compatible `/embeddings` endpoint, Azure OpenAI included.
 *
 * Upstream options:
 * - `api_version`: Azure's legacy deployment form, `/openai/deployments/{deployment}/embeddings?api-version=`,
 *   with the `api-key` header; the deployment is the upstream model name (use `model_map`).
 * - `azure: true` without `api_version`: Azure's v1 form, `/openai/v1/embeddings` with `api-key`.
 * - otherwise `Authorization: Bearer`, on `{base_url}/v1/embeddings`; a base_url that already carries a
 *   path (`https://host/v1`, `https://host/v1beta/openai`) gets `/embeddings` appended instead.
 * - `supports_base64: false` for servers that ignore `encoding_format`: floats are asked and converted.
 * - `max_batch` (default 2048) and `max_batch_tokens` (default 300000) split larger requests.
 */
export const OPENAI_MAX_ITEMS = 2048;
export const OPENAI_MAX_TOKENS = 300_000;

/** The embeddings endpoint of an upstream (URL forms and auth are the OpenAI family's, shared with chat). */
export function routeFor(up: Upstream, upstreamModel: string): OpenAiEndpoint {
  return openAiEndpoint(up, 'embeddings', upstreamModel);
}

export const openaiVendor: EmbeddingVendor = {
  id: 'openai',
  label: 'OpenAI-compatible',
  // OpenAI's embeddings API documents model, input, dimensions, encoding_format and user, all
  // cross-vendor common; what other OpenAI-compatible servers add is theirs, not OpenAI's, so no
  // other vendor's model refuses it on OpenAI's behalf.
  ownedParams: new Set(),
  requestIdHeader: 'X-Client-Request-Id',

  validate(req) {
    if (req.inputType !== undefined && req.inputType !== 'text')
      throw errors.invalidRequest(
        `input_type '${req.inputType}' is not supported by model '${req.model}': it embeds text only.`,
        'input_type',
        'unsupported_input_type',
      );
  },

  // `extra` merges over the body `build` makes: its `dimensions` is the one sent.
  dimensionsPath: (extra) => (Object.hasOwn(extra, 'dimensions') ? ['dimensions'] : undefined),

  limits(_model, up): BatchLimits {
    return {
      maxItems: positive(up.options['max_batch']) ?? OPENAI_MAX_ITEMS,
      maxTokens: positive(up.options['max_batch_tokens']) ?? OPENAI_MAX_TOKENS,
    };
  },

  build(batch: Batch, { req, upstreamModel, up }: BuildContext): BuiltCall {
    const route = routeFor(up, upstreamModel);
    const asked: EncodingFormat = req.encodingFormat === 'base64' && up.options['supports_base64'] === false ? 'float' : req.encodingFormat;
    let body: JsonObject = { input: batch.inputs, encoding_format: asked };
    if (route.sendsModel) body['model'] = upstreamModel;
    if (req.dimensions !== undefined) body['dimensions'] = req.dimensions;
    if (req.user !== undefined) body['user'] = req.user;
    for (const _ in req.extra) {
      // The batch's inputs and the mapped model are the gateway's to set; everything else merges.
      body = deepMerge(body, 'input' in req.extra || 'model' in req.extra ? omit(req.extra, ['input', 'model']) : req.extra);
      break;
    }
    const fmt = body['encoding_format'];
    return {
      request: { method: 'POST', url: route.url, headers: route.headers, body },
      passthroughFormat: fmt === 'float' || fmt === 'base64' ? fmt : undefined,
    };
  },

  // The models list: free, and it needs the same key as an embedding.
  buildProbe(up, upstreamModel) {
    const route = openAiEndpoint(up, 'models', upstreamModel);
    return { method: 'GET', url: route.url, headers: route.headers };
  },

  parse(res: UpstreamResponse, batch: Batch): BatchResult {
    const json = res.json;
    if (!isObject(json) || !Array.isArray(json['data'])) throw new Error('no data array');
    const vectors = new Array<Vector>(batch.inputs.length);
    const data = json['data'];
    for (let k = 0; k < data.length; k++) {
      const item = data[k];
      if (!isObject(item)) throw new Error('data item is not an object');
      // Some compatible servers answer out of order; `index` says where each vector belongs.
      const index = typeof item['index'] === 'number' ? item['index'] : k;
      if (!Number.isInteger(index) || index < 0 || index >= vectors.length) throw new Error(`data index ${index} out of range`);
      // Each input's vector once: of two, neither is known to be the right one.
      if (vectors[index] !== undefined) throw new Error(`two vectors for input ${index}`);
      const e = item['embedding'];
      // The values themselves (numbers, finite, how many; a base64 one decoded) are checked once by
      // the service (run.ts).
      if (typeof e === 'string') vectors[index] = e;
      else if (Array.isArray(e)) vectors[index] = e as number[];
      else throw new Error('embedding is neither a float array nor a base64 string');
    }
    for (let i = 0; i < vectors.length; i++) if (vectors[i] === undefined) throw new Error(`no vector for input ${i}`);
    const usage = json['usage'];
    const p = isObject(usage) ? usage['prompt_tokens'] : undefined;
    return { vectors, promptTokens: typeof p === 'number' ? p : undefined };
  },

  classifyError(res: UpstreamResponse): UpstreamVerdict {
    const env = readErrorEnvelope(res);
    const { message, code, param } = env;
    if (isModeration(env)) return { kind: 'moderation', message: trimMessage(message) };
    // Our account at this upstream ran out of credit: another upstream may still have some.
    if (code === 'insufficient_quota') return { kind: 'auth', status: res.status, message: trimMessage(message) };
    return defaultVerdict(res, message, param);
  },
};

function positive(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}
