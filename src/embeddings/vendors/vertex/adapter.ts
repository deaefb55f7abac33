import { errors } from '../../../core/errors.js';
import { deepMerge, findPath, isObject, type JsonObject } from '../../../core/json.js';
import { refusedLocation } from '../../../core/storage-locations.js';
import { googleAuthOptionsFrom, googleCredentialSource } from '../../../protocols/google/oauth.js';
import type { CredentialSource, Upstream, UpstreamResponse, UpstreamVerdict } from '../../../http/types.js';
import { defaultVerdict, retryAfterSeconds, trimMessage } from '../../verdicts.js';
import type { Batch, BatchLimits, BatchResult, BuildContext, BuiltCall, EmbeddingVendor, Vector } from '../../types.js';
import { embedContentBody, parseEmbedContent, usesEmbedContent } from './embed-content.js';

/**
 * Vertex AI text embeddings through `:predict`:
 * `POST {base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:predict`
 * with `instances[{content, task_type?, title?}]` (snake_case) and `parameters{outputDimensionality?,
 * autoTruncate?}` (camelCase). There is no usage block: tokens are the sum of every prediction's
 * `statistics.token_count` (sometimes serialised as a float). The Gemini Embedding 2 models use
 * `:embedContent` instead (one content per call; see embed-content.ts).
 *
 * Upstream options: `project` (required), `location` (default us-central1), Google credentials
 * (`access_token`, `service_account`, `key_file`; see protocols/google/oauth.ts), `auto_truncate`
 * (boolean default for `parameters.autoTruncate`), `max_batch` (instances per call), `concurrency`.
 * `extra_body` keys `instances`/`parameters` merge into those objects; any other key lands in `parameters`.
 * `extra_body` may not carry the text itself (INPUT_PATHS): it would be embedded and billed by Vertex
 * while the gateway's estimate, holds and token limits counted `input`.
 */
export const VERTEX_MAX_INSTANCES = 250;
/** Google documents ~20k input tokens per request for the text-embedding models. */
export const VERTEX_MAX_TOKENS = 20_000;

/**
 * Where an `extra_body` would replace the text the gateway sends: each instance's `content` on
 * `:predict`; the body's `content` on `:embedContent`, where `parameters` merges at the top level too.
 * All three are refused whichever method the upstream's model uses (failover may reach the other one).
 */
const INPUT_PATHS = ['instances.content', 'content', 'parameters.content'];

/** gemini-embedding models take one instance per call ("batchSize must be 1"); the service fans out. */
export function oneInstancePerCall(model: string): boolean {
  return /^gemini-embedding/.test(model);
}

/**
 * Vertex's own request names (spec 2.3 rule 3; other vendors' models refuse them): the `:predict`
 * envelope (`instances`, `parameters`), its parameters and the `:embedContent` body's fields as a
 * client would send them flat (`autoTruncate`, `outputDimensionality`, camelCase `taskType`).
 */
const OWNED_PARAMS: ReadonlySet<string> = new Set(['instances', 'parameters', 'autoTruncate', 'outputDimensionality', 'taskType']);

export const vertexVendor: EmbeddingVendor = {
  id: 'vertex',
  label: 'Vertex AI',
  ownedParams: OWNED_PARAMS,

  dimensionsPath: (extra, upstreamModel) => outputDimensionalityPath(extra, usesEmbedContent(upstreamModel)),

  validate(req) {
    if (req.inputs.some((i) => typeof i !== 'string'))
      throw errors.invalidRequest(`Model '${req.model}' takes text inputs, not token arrays.`, 'input');
    if (req.inputType !== undefined && req.inputType !== 'text')
      throw errors.invalidRequest(
        `input_type '${req.inputType}' is not supported by model '${req.model}': it embeds text only.`,
        'input_type',
        'unsupported_input_type',
      );
    if (req.title !== undefined && req.taskType !== 'RETRIEVAL_DOCUMENT')
      throw errors.invalidRequest("'title' is only accepted with task_type RETRIEVAL_DOCUMENT.", 'title');
    // Vertex reads a gs:// object with the upstream's service account, not the client's: these
    // models embed text only, so no client-named Cloud Storage location has a use here.
    if (refusedLocation(req.extra, 'gs') !== undefined)
      throw errors.invalidRequest(
        `Model '${req.model}' embeds text only; extra_body may not name a gs:// location (Vertex would read it as the gateway).`,
        'extra_body',
        'media_location_not_allowed',
      );
    const replaced = findPath(req.extra, INPUT_PATHS);
    if (replaced)
      throw errors.invalidRequest(
        `extra_body.${replaced} would replace the text to embed; send the text as 'input', which the gateway counts and bills.`,
        `extra_body.${replaced}`,
        'input_in_extra_body',
      );
  },

  limits(model, up): BatchLimits {
    const configured = up.options['max_batch'];
    if (typeof configured === 'number' && Number.isInteger(configured) && configured > 0)
      return { maxItems: configured, maxTokens: VERTEX_MAX_TOKENS };
    if (oneInstancePerCall(model)) return { maxItems: 1 };
    return { maxItems: VERTEX_MAX_INSTANCES, maxTokens: VERTEX_MAX_TOKENS };
  },

  build(batch: Batch, { req, upstreamModel, up }: BuildContext): BuiltCall {
    if (usesEmbedContent(upstreamModel)) {
      const body = embedContentBody(batch.inputs[0] as string, req, up.options['auto_truncate']);
      return { request: { method: 'POST', url: modelUrl(up, upstreamModel, 'embedContent'), headers: { accept: 'application/json' }, body } };
    }
    const instances = batch.inputs.map((content) => {
      const inst: JsonObject = { content };
      if (req.taskType !== undefined) inst['task_type'] = req.taskType;
      if (req.title !== undefined) inst['title'] = req.title;
      return inst;
    });
    let parameters: JsonObject = {};
    if (req.dimensions !== undefined) parameters['outputDimensionality'] = req.dimensions;
    const autoTruncate = up.options['auto_truncate'];
    if (typeof autoTruncate === 'boolean') parameters['autoTruncate'] = autoTruncate;

    let body: JsonObject = { instances };
    const extraParams: JsonObject = {};
    for (const [k, v] of Object.entries(req.extra)) {
      if (k === 'parameters' && isObject(v)) parameters = deepMerge(parameters, v);
      else if (k === 'instances' && isObject(v)) body['instances'] = instances.map((i) => deepMerge(i, v));
      else if (k !== 'instances' && k !== 'parameters') extraParams[k] = v;
    }
    parameters = deepMerge(parameters, extraParams);
    if (Object.keys(parameters).length > 0) body = { ...body, parameters };
    return {
      request: { method: 'POST', url: modelUrl(up, upstreamModel, 'predict'), headers: { accept: 'application/json' }, body },
    };
  },

  parse(res: UpstreamResponse, _batch, { upstreamModel }): BatchResult {
    if (usesEmbedContent(upstreamModel)) return parseEmbedContent(res);
    const json = res.json;
    if (!isObject(json) || !Array.isArray(json['predictions'])) throw new Error('no predictions array');
    const vectors: Vector[] = [];
    let tokens = 0;
    let counted = false;
    for (const p of json['predictions']) {
      const emb = isObject(p) ? p['embeddings'] : undefined;
      const values = isObject(emb) ? emb['values'] : undefined;
      // The values themselves (numbers, finite, how many) are checked once by the service (run.ts).
      if (!Array.isArray(values)) throw new Error('prediction without embeddings.values');
      vectors.push(values as number[]);
      const stats = isObject(emb) ? emb['statistics'] : undefined;
      const count = isObject(stats) ? Number(stats['token_count']) : NaN;
      if (Number.isFinite(count)) {
        tokens += count;
        counted = true;
      }
    }
    return { vectors, promptTokens: counted ? Math.round(tokens) : undefined };
  },

  classifyError(res: UpstreamResponse): UpstreamVerdict {
    const err = isObject(res.json) && isObject(res.json['error']) ? res.json['error'] : undefined;
    const message = typeof err?.['message'] === 'string' ? err['message'] : res.text;
    const status = typeof err?.['status'] === 'string' ? err['status'] : '';
    switch (status) {
      case 'UNAUTHENTICATED':
      case 'PERMISSION_DENIED':
        return { kind: 'auth', status: res.status, message: trimMessage(message) };
      case 'RESOURCE_EXHAUSTED':
      case 'UNAVAILABLE':
      case 'INTERNAL':
      case 'DEADLINE_EXCEEDED':
      case 'ABORTED':
        return { kind: 'retryable', status: res.status, message: trimMessage(message), retryAfterSeconds: retryAfterSeconds(res.headers) };
    }
    return defaultVerdict(res, message);
  },

  // A read of the publisher model resource (the model URL without a method): free, same token.
  buildProbe(up, upstreamModel) {
    return { method: 'GET', url: modelUrl(up, upstreamModel), headers: { accept: 'application/json' } };
  },

  credentials(up, executor): CredentialSource {
    const opts = googleAuthOptionsFrom(up.options);
    if (!opts.accessToken && !opts.serviceAccount && !opts.keyFile && up.apiKey) opts.accessToken = up.apiKey;
    try {
      return googleCredentialSource(opts, executor);
    } catch (e) {
      // A misconfigured upstream must not stop the gateway from starting: its calls fail over instead.
      const message = `Vertex upstream '${up.name}': ${(e as Error).message}`;
      return { headers: () => Promise.reject(new Error(message)) };
    }
  },
};

const urls = new WeakMap<Upstream, Map<string, string>>();

/** The publisher model's URL, with `:method` appended when one is given. */
function modelUrl(up: Upstream, model: string, method?: 'predict' | 'embedContent'): string {
  const base = publisherModelUrl(up, model);
  return method ? `${base}:${method}` : base;
}

function publisherModelUrl(up: Upstream, model: string): string {
  let byModel = urls.get(up);
  if (!byModel) urls.set(up, (byModel = new Map()));
  let url = byModel.get(model);
  if (url) return url;
  const project = up.options['project'];
  // A plain Error: the service turns it into a failed attempt on this upstream, not a 500.
  if (typeof project !== 'string' || project === '') throw new Error(`the Vertex upstream has no 'project' option`);
  const location = typeof up.options['location'] === 'string' ? up.options['location'] : 'us-central1';
  url =
    `${up.baseUrl}/v1/projects/${encodeURIComponent(project)}/locations/${encodeURIComponent(location)}` +
    `/publishers/google/models/${encodeURIComponent(model)}`;
  byModel.set(model, url);
  return url;
}

/**
 * Where `extra` sets `outputDimensionality`, as `build` merges it. On `:predict`, `parameters` merges
 * into the parameters first and every other key after it, so a flat `outputDimensionality` wins over
 * `parameters.outputDimensionality`. On `:embedContent` both merge into the body in the client's
 * order (embed-content.ts), so the later one wins.
 */
function outputDimensionalityPath(extra: JsonObject, embedContent: boolean): readonly string[] | undefined {
  const nested = (v: unknown) => isObject(v) && Object.hasOwn(v, 'outputDimensionality');
  if (!embedContent) {
    if (Object.hasOwn(extra, 'outputDimensionality')) return ['outputDimensionality'];
    return nested(extra['parameters']) ? ['parameters', 'outputDimensionality'] : undefined;
  }
  let path: readonly string[] | undefined;
  for (const [k, v] of Object.entries(extra)) {
    if (k === 'outputDimensionality') path = ['outputDimensionality'];
    else if (k === 'parameters' && nested(v)) path = ['parameters', 'outputDimensionality'];
  }
  return path;
}
