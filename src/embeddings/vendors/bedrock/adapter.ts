import type { SignatureV4 } from '@smithy/signature-v4';
import { refusedLocation } from '../../../core/storage-locations.js';
import { errors } from '../../../core/errors.js';
import { deepMerge, findPath, isObject, omit, type JsonObject } from '../../../core/json.js';
import { restoreNumbers } from '../../../core/lossless-json.js';
import type { Upstream, UpstreamRequest, UpstreamResponse, UpstreamVerdict } from '../../../http/types.js';
import { defaultVerdict, retryAfterSeconds, trimMessage } from '../../verdicts.js';
import type { Batch, BatchResult, BuildContext, BuiltCall, EmbeddingRequest, EmbeddingVendor } from '../../types.js';
import { invokeModelId } from './inference-profile.js';

/**
 * TwelveLabs Marengo on Amazon Bedrock through `InvokeModel` (`POST {base_url}/model/{modelId}/invoke`),
 * one input per call. `input_type` becomes Marengo's `inputType`:
 * - `text`: the input is the text (2.7: `inputText`, 3.0: `text.inputText`);
 * - `image`: the input is base64 bytes, a `data:` URL, or an `s3://` URI under one of the upstream's
 *   `s3_input_prefixes` (bucket owner from `extra_body.bucketOwner` or the upstream option `bucket_owner`);
 * - `video`, `audio`: refused with 400 `unsupported_input_type` before any upstream call, because
 *   Bedrock serves them only through the asynchronous StartAsyncInvoke API with results written to S3,
 *   which a synchronous embeddings call cannot wait for.
 *
 * Auth: SigV4 (service `bedrock`, region from the `region` option, default us-east-1) with options
 * `access_key_id`, `secret_access_key`, `session_token?`; or a Bedrock API key as `api_key` (Bearer).
 * Usage comes from the `x-amzn-bedrock-input-token-count` header when Bedrock sends it.
 * A Marengo 2.7 base model id is sent as its region's inference profile (inference-profile.ts).
 * `extra_body` merges into the body but may not carry the input or its kind (INPUT_PATHS).
 */
const MARENGO_DIMS: readonly [RegExp, number][] = [
  [/marengo-embed-2-7/, 1024],
  [/marengo-embed-3-0/, 512],
];

/**
 * Where an `extra_body` would replace what the gateway sends to embed: the input (2.7 `inputText`,
 * `mediaSource`; 3.0 the same one level down, under `text`, `image` or any other modality) or its kind
 * (`inputType`, which `input_type` sets and the video/audio refusal reads). Bedrock would embed and
 * bill it while the gateway's estimate, holds and token limits counted `input`.
 */
const INPUT_PATHS = ['inputType', 'inputText', 'mediaSource', '*.inputText', '*.mediaSource'];

export function isMarengo3(modelId: string): boolean {
  return /marengo-embed-3/.test(modelId);
}

/**
 * Marengo's own request names on Bedrock (spec 2.3 rule 3; other vendors' models refuse them): the
 * documented 2.7 body fields (Bedrock user guide, "TwelveLabs Marengo Embed 2.7 request parameters";
 * 3.0 nests the same under its modality objects) and `bucketOwner`, the S3 location's owner this
 * adapter reads from `extra_body`. The input ones are this vendor's too, refused here by `validate`.
 */
const OWNED_PARAMS: ReadonlySet<string> = new Set([
  'inputType', 'inputText', 'mediaSource', 'textTruncate', 'embeddingOption',
  'startSec', 'lengthSec', 'useFixedLengthSec', 'minClipSec', 'bucketOwner',
]);

export const bedrockVendor: EmbeddingVendor = {
  id: 'bedrock',
  label: 'Amazon Bedrock',
  ownedParams: OWNED_PARAMS,

  validate(req: EmbeddingRequest, modelId: string, up: Upstream) {
    if (req.inputs.some((i) => typeof i !== 'string'))
      throw errors.invalidRequest(`Model '${req.model}' takes text or media inputs, not token arrays.`, 'input');
    if (req.inputType === 'video' || req.inputType === 'audio')
      throw errors.invalidRequest(
        `input_type '${req.inputType}' is not available synchronously for '${req.model}': Bedrock embeds video and audio ` +
          'only through its asynchronous API (StartAsyncInvoke, results written to S3). Use text or image here.',
        'input_type',
        'unsupported_input_type',
      );
    checkS3Locations(req, up);
    const replaced = findPath(req.extra, INPUT_PATHS);
    if (replaced)
      throw errors.invalidRequest(
        replaced === 'inputType'
          ? "extra_body.inputType would change what is embedded; use 'input_type' instead."
          : `extra_body.${replaced} would replace the input to embed; send it as 'input', which the gateway counts and bills.`,
        `extra_body.${replaced}`,
        'input_in_extra_body',
      );
    if (req.dimensions !== undefined) {
      const fixed = MARENGO_DIMS.find(([re]) => re.test(modelId))?.[1];
      if (req.dimensions !== fixed)
        throw errors.invalidRequest(
          `Model '${req.model}' returns vectors of a fixed size${fixed ? ` (${fixed})` : ''}; 'dimensions' cannot change it.`,
          'dimensions',
        );
    }
  },

  limits: () => ({ maxItems: 1 }),

  build(batch: Batch, { req, upstreamModel, up }: BuildContext): BuiltCall {
    const input = batch.inputs[0] as string;
    const v3 = isMarengo3(upstreamModel);
    const extra = req.extra;
    let body: JsonObject;
    if ((req.inputType ?? 'text') === 'text') {
      body = v3 ? { inputType: 'text', text: { inputText: input } } : { inputType: 'text', inputText: input };
    } else {
      const source = mediaSource(input, extra['bucketOwner'] ?? up.options['bucket_owner']);
      body = v3 ? { inputType: 'image', image: { mediaSource: source } } : { inputType: 'image', mediaSource: source };
    }
    if (Object.keys(extra).length > 0) body = deepMerge(body, omit(extra, ['bucketOwner']));
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (!hasAwsKeys(up) && up.apiKey) headers['authorization'] = `Bearer ${up.apiKey}`;
    return {
      request: {
        method: 'POST',
        url: `${up.baseUrl}/model/${encodeURIComponent(invokeModelId(upstreamModel, regionOf(up)))}/invoke`,
        headers,
        // A string, so the bytes signed are exactly the bytes sent; the client's strings as it sent them (core/lossless-json.ts).
        body: restoreNumbers(JSON.stringify(body)),
      },
    };
  },

  // A signed GET on the runtime host of a path that invokes nothing: the signature (or bearer key) is
  // checked before the route, so a 403 means refused and a 404 means the credentials were accepted.
  buildProbe(up, upstreamModel) {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (!hasAwsKeys(up) && up.apiKey) headers['authorization'] = `Bearer ${up.apiKey}`;
    return { method: 'GET', url: `${up.baseUrl}/model/${encodeURIComponent(upstreamModel)}`, headers };
  },

  async sign(req: UpstreamRequest, up: Upstream): Promise<UpstreamRequest> {
    if (!hasAwsKeys(up)) return req;
    const { signRequest } = await loadSigV4();
    const headers = await signRequest(await signerFor(up), { method: req.method, url: req.url, headers: req.headers, body: String(req.body ?? '') });
    return { ...req, headers };
  },

  parse(res: UpstreamResponse): BatchResult {
    const json = res.json;
    if (!isObject(json)) throw new Error('not a JSON object');
    let first: unknown = json;
    if (Array.isArray(json['data'])) first = json['data'][0];
    const embedding = isObject(first) ? first['embedding'] : undefined;
    // The values themselves (numbers, finite, how many) are checked once by the service (run.ts).
    if (!Array.isArray(embedding)) throw new Error('no embedding in the answer');
    const count = Number(res.headers['x-amzn-bedrock-input-token-count']);
    return { vectors: [embedding as number[]], promptTokens: Number.isFinite(count) && count >= 0 ? count : undefined };
  },

  classifyError(res: UpstreamResponse): UpstreamVerdict {
    const json = isObject(res.json) ? res.json : {};
    const raw = json['message'] ?? json['Message'];
    const message = typeof raw === 'string' ? raw : res.text;
    const type = (res.headers['x-amzn-errortype'] ?? '').split(':')[0] ?? '';
    switch (type) {
      case 'AccessDeniedException':
      case 'UnrecognizedClientException':
      case 'InvalidSignatureException':
      case 'ExpiredTokenException':
        return { kind: 'auth', status: res.status, message: trimMessage(message) };
      case 'ThrottlingException':
      case 'ServiceQuotaExceededException':
      case 'ModelNotReadyException':
      case 'ModelTimeoutException':
      case 'ModelErrorException':
      case 'InternalServerException':
      case 'ServiceUnavailableException':
        return { kind: 'retryable', status: res.status, message: trimMessage(message), retryAfterSeconds: retryAfterSeconds(res.headers) };
    }
    return defaultVerdict(res, message);
  },
};

/**
 * Bedrock reads an `s3://` location with the upstream's AWS identity, not the client's: a location
 * a client names (as an input, or anywhere in `extra_body`, which merges into the body) must lie
 * under one the operator listed in `s3_input_prefixes`.
 */
function checkS3Locations(req: EmbeddingRequest, up: Upstream): void {
  const listed = Array.isArray(up.options['s3_input_prefixes']) ? (up.options['s3_input_prefixes'] as unknown[]).filter((p): p is string => typeof p === 'string') : [];
  // S3 keys are literal, but a `.` or `..` segment is refused anyway: nothing should depend on how a
  // reader might normalise it.
  const allowed = (uri: string): boolean =>
    !/\/\.{1,2}(\/|$)/.test(uri.slice(5)) && listed.some((p) => uri === p || uri.startsWith(p.endsWith('/') ? p : `${p}/`));
  const refuse = (param: string): never => {
    throw errors.invalidRequest(
      listed.length === 0
        ? `Model '${req.model}' takes no s3:// inputs on this gateway; send the image as base64 or a data: URL.`
        : `An s3:// input must lie under one of the locations this gateway allows: ${listed.join(', ')}.`,
      param,
      'media_location_not_allowed',
    );
  };
  // A text input is sent as inputText, which Bedrock embeds as text and never reads a location from.
  if ((req.inputType ?? 'text') !== 'text' && refusedLocation(req.inputs, 's3', allowed) !== undefined) refuse('input');
  if (refusedLocation(req.extra, 's3', allowed) !== undefined) refuse('extra_body');
}

function mediaSource(input: string, bucketOwner: unknown): JsonObject {
  if (input.startsWith('s3://')) {
    const loc: JsonObject = { uri: input };
    if (typeof bucketOwner === 'string' && bucketOwner !== '') loc['bucketOwner'] = bucketOwner;
    return { s3Location: loc };
  }
  const comma = input.startsWith('data:') ? input.indexOf(',') : -1;
  return { base64String: comma >= 0 ? input.slice(comma + 1) : input };
}

function regionOf(up: Upstream): string {
  return typeof up.options['region'] === 'string' ? up.options['region'] : 'us-east-1';
}

function hasAwsKeys(up: Upstream): boolean {
  return typeof up.options['access_key_id'] === 'string' && typeof up.options['secret_access_key'] === 'string';
}

/**
 * Smithy's signer and its dependencies (about 1 MB of heap) are loaded by the first signed request:
 * a gateway without an AWS-keyed Bedrock upstream never needs them.
 */
let sigv4: Promise<typeof import('../../../protocols/aws/sigv4.js')> | undefined;
const loadSigV4 = () => (sigv4 ??= import('../../../protocols/aws/sigv4.js'));

const signers = new WeakMap<Upstream, SignatureV4>();

/** The upstream's signer (made once per upstream); only called when hasAwsKeys(up). */
async function signerFor(up: Upstream): Promise<SignatureV4> {
  let s = signers.get(up);
  if (s === undefined) {
    const { awsSigner } = await loadSigV4();
    const o = up.options;
    s = awsSigner(
      {
        accessKeyId: o['access_key_id'] as string,
        secretAccessKey: o['secret_access_key'] as string,
        sessionToken: typeof o['session_token'] === 'string' ? o['session_token'] : undefined,
      },
      regionOf(up),
    );
    signers.set(up, s);
  }
  return s;
}
