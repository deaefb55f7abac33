import type { ZodTypeAny } from 'zod';
import type { JsonObject } from '../core/json.js';
import type { Executor } from '../http/executor.js';
import type { CredentialSource, Upstream, UpstreamRequest, UpstreamResponse, UpstreamVerdict } from '../http/types.js';
import type { SimServer } from '../sim/framework.js';

export type EncodingFormat = 'float' | 'base64';
export type InputType = 'text' | 'image' | 'video' | 'audio';

/** One input as the client sent it: a text (or a media reference) or a list of token ids. */
export type EmbeddingInput = string | number[];

/** The embeddings request after validation (spec 2.5), the same whichever vendor serves it. */
export interface EmbeddingRequest {
  model: string;
  /** Always a list, in the client's order; a single string became a list of one. */
  inputs: EmbeddingInput[];
  encodingFormat: EncodingFormat;
  dimensions?: number;
  user?: string;
  taskType?: string;
  title?: string;
  inputType?: InputType;
  /** `extra_body` plus any unknown top-level field: merged into the vendor's body by the adapter. */
  extra: JsonObject;
}

/**
 * One vector as an upstream returned it: JSON floats, or a base64 string of little-endian float32
 * values (OpenAI's `encoding_format: "base64"`). Converted only when the client asked the other form.
 */
export type Vector = number[] | string;

/** A slice of the request's inputs sent in one upstream call. */
export interface Batch {
  /** Position of the first input of this slice in the client's list. */
  offset: number;
  inputs: EmbeddingInput[];
  /** Gateway token estimate per input (same order), for vendors that report no usage. */
  tokens: number[];
}

export interface BuildContext {
  req: EmbeddingRequest;
  /** The model name this upstream expects (model_map applied). */
  upstreamModel: string;
  up: Upstream;
}

export interface BuiltCall {
  request: UpstreamRequest;
  /**
   * Set by vendors whose 2xx body already has the spec's shape (OpenAI-compatible): the encoding the
   * upstream was asked for. When it equals the client's and one call serves the whole request, the
   * service forwards the upstream's bytes without parsing the vectors.
   */
  passthroughFormat?: EncodingFormat;
}

export interface BatchResult {
  /** One vector per input of the batch, in the batch's order. */
  vectors: Vector[];
  /** Input tokens the vendor reported for this call, when it reports any. */
  promptTokens?: number;
}

export interface BatchLimits {
  /** Inputs per upstream call. */
  maxItems: number;
  /** Summed input tokens per upstream call (gateway estimate), when the vendor caps it. */
  maxTokens?: number;
}

/**
 * An embeddings vendor adapter: a pure translator, like the video ones. It builds requests and parses
 * answers; the service sends them (with the executor), splits batches, fails over and bills.
 */
export interface EmbeddingVendor {
  id: string;
  /** Human label for messages ("Vertex AI"). */
  label: string;
  /**
   * Native request field names genuinely specific to this vendor's API (spec 2.3 rule 3): sent to a
   * model of another vendor, as an `extra_body` key or an unknown top-level field, they are refused
   * with 400 `unsupported_parameter` (ownership.ts). Cross-vendor-common names (`dimensions`,
   * `encoding_format`, `user`, `input_type`, `task_type`, `title`, `model`, `input`) never count.
   */
  ownedParams: ReadonlySet<string>;
  /** The header under which the vendor takes the caller's request id (OpenAI: X-Client-Request-Id). */
  requestIdHeader?: string;
  /**
   * Where the extra fields (`extra_body`, unknown top-level fields) set this vendor's vector size, as
   * the adapter's `build` merges them: the path in `extra` whose value goes upstream in place of the
   * top-level `dimensions`, or undefined when `extra` sets none (requested-dimensions.ts). Absent:
   * the vendor takes its size from the top-level `dimensions` only.
   */
  dimensionsPath?(extra: JsonObject, upstreamModel: string): readonly string[] | undefined;
  /** Vendor-specific 400s (unsupported input kinds, fields the model cannot take). Throws a GatewayError. */
  validate?(req: EmbeddingRequest, upstreamModel: string, up: Upstream): void;
  limits(upstreamModel: string, up: Upstream): BatchLimits;
  build(batch: Batch, ctx: BuildContext): BuiltCall;
  /**
   * Reads a 2xx answer. Throwing means the answer was malformed (treated as an upstream failure).
   * The vectors' values need not be looked at: the service checks every one once (all numbers,
   * finite float32, at most MAX_VECTOR_DIMENSIONS of them; answer-bounds.ts, vectors.ts).
   */
  parse(res: UpstreamResponse, batch: Batch, ctx: BuildContext): BatchResult;
  classifyError(res: UpstreamResponse): UpstreamVerdict;
  /** Credential source (e.g. Google OAuth); built once per upstream by the service. */
  credentials?(up: Upstream, executor: Executor): CredentialSource;
  /** Final step before sending, for signatures that cover the body (AWS SigV4). */
  sign?(req: UpstreamRequest, up: Upstream): Promise<UpstreamRequest>;
  /**
   * One cheap authenticated request for `gateway check --probe`: a models list or a read of something
   * that does not exist, never an embedding (that would be billed). A 2xx or 404 means the key was accepted.
   */
  buildProbe?(up: Upstream, upstreamModel: string): UpstreamRequest;
}

/** A model the demo wires to a simulator, priced per million tokens (currency units, as in the config). */
export interface DemoModel {
  name: string;
  capabilities: ('embedding' | 'chat')[];
  pricePerMillionInput: number;
  pricePerMillionOutput?: number;
  description?: string;
}

/** How the embedded default wires one upstream to this vendor's simulator. */
export interface EmbeddingDemoUpstream {
  apiKey?: string;
  /** Vendor-specific upstream options (project, location, region, credentials ...). */
  options: JsonObject;
  models: DemoModel[];
}

export interface EmbeddingSimulatorOptions {
  /** The credential the simulator expects (API key, bearer token, or AWS secret key). */
  apiKey?: string;
  port?: number;
}

/** Everything an embeddings vendor folder exports through its index.ts. */
export interface EmbeddingVendorModule {
  /** The vendor id (same as `vendor.id`): the `vendor` value of a config upstream. */
  id: string;
  vendor: EmbeddingVendor;
  /** The upstream options this vendor reads (keys beyond the common upstream keys), checked at start. */
  optionsSchema: ZodTypeAny;
  simulator: {
    start(opts?: EmbeddingSimulatorOptions): Promise<SimServer>;
    demo(sim: SimServer): EmbeddingDemoUpstream;
  };
}
