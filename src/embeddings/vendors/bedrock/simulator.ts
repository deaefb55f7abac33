import { randomUUID } from 'node:crypto';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { preloadSimTokenizers, simTokens, simVector } from '../../../sim/vectors.js';

/**
 * Bedrock Runtime `InvokeModel` for TwelveLabs Marengo on loopback. Verifies the SigV4 signature with
 * the same Smithy signer the gateway uses (or accepts a Bedrock API key as Bearer), checks the Marengo
 * 2.7 (flat) or 3.0 (nested) body, honours `inputType`, and answers `{data:[{embedding}]}` with the
 * `x-amzn-bedrock-input-token-count` header. Video and audio are refused as on Bedrock: they exist only
 * through the asynchronous API. Errors carry `x-amzn-errortype` and `{message}`.
 */
export const BEDROCK_SIM_ACCESS_KEY = 'AKIASIMBEDROCK00001';
export const BEDROCK_SIM_SECRET = 'sim/bedrock/secret-access-key';
export const BEDROCK_SIM_API_KEY = 'bedrock-api-key-sim';
export const BEDROCK_SIM_REGION = 'us-east-1';

export const MARENGO_SIM_MODELS: Readonly<Record<string, { dims: number; maxTextTokens: number }>> = {
  'us.twelvelabs.marengo-embed-2-7-v1:0': { dims: 1024, maxTextTokens: 77 },
  'eu.twelvelabs.marengo-embed-2-7-v1:0': { dims: 1024, maxTextTokens: 77 },
  'apac.twelvelabs.marengo-embed-2-7-v1:0': { dims: 1024, maxTextTokens: 77 },
  'twelvelabs.marengo-embed-3-0-v1:0': { dims: 512, maxTextTokens: 500 },
  'us.twelvelabs.marengo-embed-3-0-v1:0': { dims: 512, maxTextTokens: 500 },
};

const INVOKE = /^\/model\/([^/]+)\/invoke$/;

/** What the simulator returns for one input of a modality (text, or the image's base64/S3 URI). */
export function marengoSimVector(modelId: string, inputType: string, content: string): Float32Array {
  const dims = MARENGO_SIM_MODELS[modelId]?.dims ?? 1024;
  return simVector(modelId, `${inputType}:${content}`, dims);
}

export async function startBedrockSimulator(opts: { apiKey?: string; port?: number } = {}): Promise<SimServer> {
  preloadSimTokenizers();
  const secret = opts.apiKey ?? BEDROCK_SIM_SECRET;
  return SimServer.start(
    'bedrock-embeddings',
    async (req, sim) => {
      // The signature (or bearer key) is checked before the operation is looked up, so a wrong
      // credential is refused on any path, the one `gateway check --probe` reads included.
      const denied = await authenticate(req, sim, secret);
      if (denied) return denied;
      const m = INVOKE.exec(req.path);
      if (req.method !== 'POST' || !m) return awsError(404, 'UnknownOperationException', 'Unknown operation.');
      return invoke(req, decodeURIComponent(m[1]!));
    },
    { port: opts.port, settings: { apiKey: secret, accessKeyId: BEDROCK_SIM_ACCESS_KEY, bearerKey: BEDROCK_SIM_API_KEY, region: BEDROCK_SIM_REGION } },
  );
}

async function authenticate(req: SimRequest, sim: SimServer, secret: string): Promise<SimReply | undefined> {
  const auth = req.headers['authorization'] ?? '';
  if (/^Bearer /i.test(auth)) {
    return bearer(req) === sim.settings['bearerKey']
      ? undefined
      : awsError(403, 'AccessDeniedException', 'Invalid API Key format: Must start with pre-defined prefix.');
  }
  if (!auth) return awsError(403, 'AccessDeniedException', 'Missing Authentication Token');
  // Loaded here, not at the top: the gateway imports this module (for the embedded default) and
  // should not load the signer's dependencies unless a simulator actually verifies a request.
  const { verifySignature } = await import('../../../protocols/aws/sigv4.js');
  const problem = await verifySignature(
    { method: req.method, path: req.path, query: req.query, headers: req.headers, body: req.raw },
    (id) => (id === sim.settings['accessKeyId'] ? secret : undefined),
    { region: sim.settings['region'] as string, service: 'bedrock' },
  );
  if (!problem) return undefined;
  if (problem === 'unknown access key')
    return awsError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
  return awsError(
    403,
    'InvalidSignatureException',
    `The request signature we calculated does not match the signature you provided (${problem}).`,
  );
}

function invoke(req: SimRequest, modelId: string): SimReply {
  if (/^twelvelabs\.marengo-embed-2-7/.test(modelId))
    return validation(
      `Invocation of model ID ${modelId} with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model.`,
    );
  const spec = MARENGO_SIM_MODELS[modelId];
  if (!spec) return validation('The provided model identifier is invalid.');
  const body = req.json;
  if (typeof body !== 'object' || body === null) return validation('Malformed input request, please reformat your input and try again.');
  const v3 = /marengo-embed-3/.test(modelId);
  const inputType = body.inputType;
  if (inputType === 'video' || inputType === 'audio')
    return validation(`inputType ${inputType} is not supported by InvokeModel for ${modelId}; use StartAsyncInvoke.`);

  let content: string;
  let tokens: number | undefined;
  if (inputType === 'text') {
    const text = v3 ? body.text?.inputText : body.inputText;
    if (typeof text !== 'string' || text === '') return validation('Malformed input request: inputText is required for inputType text.');
    const truncate = v3 ? 'end' : (body.textTruncate ?? 'end');
    if (truncate !== 'end' && truncate !== 'none') return validation('Malformed input request: textTruncate must be end or none.');
    tokens = simTokens(text);
    if (tokens > spec.maxTextTokens) {
      if (truncate === 'none') return validation(`Input text exceeds ${spec.maxTextTokens} tokens.`);
      tokens = spec.maxTextTokens;
    }
    content = text;
  } else if (inputType === 'image') {
    const source = v3 ? body.image?.mediaSource : body.mediaSource;
    const b64 = source?.base64String;
    const uri = source?.s3Location?.uri;
    if (typeof b64 === 'string' && b64 !== '') content = b64;
    else if (typeof uri === 'string' && uri.startsWith('s3://')) content = uri;
    else return validation('Malformed input request: mediaSource needs base64String or s3Location.');
  } else {
    return validation(`Malformed input request: inputType must be one of text, image, video, audio.`);
  }

  const embedding = Array.from(marengoSimVector(modelId, inputType, content));
  const headers: Record<string, string> = { 'x-amzn-requestid': randomUUID(), 'x-amzn-bedrock-invocation-latency': '12' };
  if (tokens !== undefined) headers['x-amzn-bedrock-input-token-count'] = String(tokens);
  return { headers, json: { data: [{ embedding }] } };
}

function validation(message: string): SimReply {
  return awsError(400, 'ValidationException', message);
}

function awsError(status: number, type: string, message: string): SimReply {
  return {
    status,
    headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': randomUUID() },
    json: { message },
  };
}
