import type { GatewayError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { Executor } from '../http/executor.js';
import type { CredentialSource, Upstream, UpstreamRequest, UpstreamResponse, UpstreamVerdict } from '../http/types.js';

/** Standard cross-vendor fields (spec 2.2), parsed and validated once by video/standard.ts. */
export interface StandardVideoRequest {
  model: string;
  prompt: string;
  /** Requested duration; from `seconds`. */
  seconds?: number;
  /** Width x height, from `size` or derived from `resolution` + `aspect_ratio`. */
  size?: { width: number; height: number };
  /** Height in pixels from `resolution` ("720p" -> 720), or derived from `size`. */
  resolution?: number;
  /** From `aspect_ratio` or its alias `ratio`, or derived from `size` (reduced, e.g. "16:9"). */
  aspectRatio?: string;
  frameImages: FrameImage[];
  inputReferences: InputReference[];
  /** Which of the size-expressing fields the client actually sent (adapters may care). */
  sent: { size: boolean; resolution: boolean; aspectRatio: boolean };
}

export interface FrameImage {
  url: string;
  frameType: 'first_frame' | 'last_frame';
}

export interface InputReference {
  type: string;
  url: string;
  role?: string;
}

/** Bytes the gateway fetched for a URL an adapter asked to inline (SSRF-guarded). */
export interface InlineMedia {
  base64: string;
  mimeType: string;
}

export interface CreateInput {
  /** The public model name the client asked for. */
  model: string;
  /** The name sent upstream (an upstream may map names, e.g. an Azure deployment). */
  upstreamModel: string;
  std: StandardVideoRequest;
  /** Every top-level field that is not standard, exactly as the client sent it. */
  native: JsonObject;
  /** Fetched bytes for the URLs returned by `inlineMedia`. */
  media: ReadonlyMap<string, InlineMedia>;
}

/** What the gateway keeps about an upstream task, enough to poll it and fetch its bytes. */
export interface TaskRef {
  taskId: string;
  model: string;
  upstreamModel: string;
  /** Adapter-private data stored with the job (e.g. fal's status/response URLs). */
  meta: JsonObject;
}

/** One finished video. `url` is fetched through `buildContent`; `inlineBase64` is stored by the core. */
export interface VideoOutput {
  url?: string;
  /**
   * The video's base64, as the adapter read it from a small answer; from a large one, where it was
   * lifted out before parsing (http/inline-media.ts), its characters as bytes (video/answer-media.ts).
   */
  inlineBase64?: string | Buffer;
  mimeType?: string;
}

export interface VideoUsage {
  completion_tokens?: number;
  total_tokens?: number;
}

/** Stable failure codes for failed jobs; vendor codes stay in vendor_data. */
export type FailureCode =
  | 'content_policy_violation'
  | 'invalid_media'
  | 'unsupported_parameters'
  | 'generation_failed'
  | 'cancelled'
  | 'expired'
  | 'timeout';

/**
 * What a vendor's 2xx create (remix, edit, extension) answer says: the task, what the adapter keeps
 * to poll it (`meta`), and the answer's other fields (`vendorData`), built as the vendor's poll
 * vendor_data is, so a field mapped to the job (task id, status) is not repeated. They are the
 * job's vendor_data until its first poll, and stay under the fields of every poll after (a poll's
 * own field wins on the same key; video/refresh.ts).
 */
export interface CreatedTask {
  taskId: string;
  meta?: JsonObject;
  vendorData?: JsonObject;
}

export type VendorStatus =
  | {
      state: 'processing';
      progress?: number;
      /** The vendor's word for where the task is (its own queued vs running); omitted when it has none. */
      phase?: 'queued' | 'running';
      vendorData: JsonObject;
    }
  | {
      state: 'completed';
      /** Actual duration of the (first) generated video, in seconds. */
      seconds: number;
      /** Seconds to bill: the sum over every generated video (defaults to `seconds`). */
      billableSeconds?: number;
      /** Seconds of `seconds` the job did not generate (an extension's source): shown, never billed. */
      sourceSeconds?: number;
      usage?: VideoUsage;
      outputs: VideoOutput[];
      vendorData: JsonObject;
    }
  | { state: 'failed'; code: FailureCode; message: string; vendorData: JsonObject };

/** An uploaded video, as the vendor is to receive it (the gateway sniffed its type from its bytes). */
export interface UploadedVideo {
  data: Buffer;
  mimeType: string;
  filename: string;
}

/**
 * An edit or an extension (OpenAI's POST /videos/edits and /videos/extensions): a new video from a
 * finished task on the same upstream, or from a video the client uploaded.
 */
export interface DeriveInput {
  model: string;
  upstreamModel: string;
  prompt: string;
  source: { task: TaskRef } | { file: UploadedVideo };
  /**
   * The source's duration where the gateway knows it: a finished job's; an upload's (what its file
   * declares) for an edit only, since an extension's bill is lowered by it.
   */
  sourceSeconds?: number;
  /** An extension's new segment, in seconds. */
  seconds?: number;
}

export type DeriveOp = 'edit' | 'extend';

/**
 * For an uploaded source: the upstream's name for the model the client named. Such a request names
 * no model to the vendor (there is no finished task whose model it continues), so a vendor whose
 * body has no model field refuses a model it would not run.
 */
export interface DeriveUpload {
  uploadUpstreamModel?: string;
}

/** The vendor's edit and extension calls; an operation left out is one the vendor does not offer. */
export interface VideoDerivations {
  /** Vendor-specific 400s (an extension length the vendor refuses), before anything is held or sent. */
  validate?(op: DeriveOp, input: Omit<DeriveInput, 'source' | 'upstreamModel'> & DeriveUpload): void;
  edit?(input: DeriveInput, up: Upstream): UpstreamRequest;
  extend?(input: DeriveInput, up: Upstream): UpstreamRequest;
  /** Reads the new task from a 2xx answer; it is then polled, fetched and billed like any other. */
  parse(op: DeriveOp, res: UpstreamResponse, input: DeriveInput, up: Upstream): CreatedTask;
}

/** A reusable character made from a video (OpenAI's /videos/characters), as the vendor reports it. */
export interface VendorCharacter {
  /** The vendor's id: sealed into the gateway's, never shown. */
  id: string;
  name: string | null;
  /** Unix seconds. */
  createdAt: number;
  /** The vendor's other fields. */
  vendorData: JsonObject;
}

/** The vendor's character calls. */
export interface VideoCharacters {
  create(input: { name: string; video: UploadedVideo }, up: Upstream): UpstreamRequest;
  get(characterId: string, up: Upstream): UpstreamRequest;
  /** Reads a 2xx answer of either call. */
  parse(res: UpstreamResponse): VendorCharacter;
}

/** What a signed callback carries, as the vendor's scheme defines it. */
export interface SignedCallback {
  /** The exact bytes the vendor signed. */
  message: Buffer;
  signature: Buffer;
  /** When the vendor signed it, in seconds since the epoch (checked against a tolerance). */
  timestamp: number;
}

/**
 * A vendor's callback signature scheme (Ed25519 over a message built from headers and body, keys
 * published as a JWKS). Pure: reads the request; the core fetches keys and verifies.
 */
export interface CallbackSignature {
  /** The vendor's public JWKS; an upstream's `webhook_jwks_url` option replaces it. */
  jwksUrl: string;
  /** Largest accepted difference between the signing time and now, in seconds. */
  toleranceSeconds: number;
  /** The signed parts of a callback, or why it carries no usable signature. */
  read(headers: Record<string, string | string[] | undefined>, body: Buffer): SignedCallback | { refused: string };
}

/**
 * A video vendor adapter: a pure translator. It never does I/O; the core sends what it builds.
 * One folder per vendor under video/vendors/<id>/, registered in video/vendors/registry.ts.
 */
export interface VideoVendor {
  id: string;
  /** Human label used in error messages ("wan (DashScope)"). */
  label: string;
  /** Native top-level parameter names this vendor owns (spec 2.3 rule 3). */
  ownedParams: ReadonlySet<string>;
  /**
   * The native parameter that makes the vendor POST to a URL when a task finishes (Seedance
   * `callback_url`, fal `webhook_url`). The gateway sets it to its own per-job URL when the client
   * did not set it, so the job settles at once instead of at the next poll.
   */
  callbackParam?: string;
  /**
   * The vendor's poll answers can carry the finished video itself (Veo's base64 bytes without a
   * storageUri, fal's `data:` URL in sync mode): its polls are read under the configured
   * `server.max_answer_bytes`, the base64 strings lifted out before parsing and the rest held to
   * 1 MiB. Every other vendor's are read under a 1 MiB cap (vendors/answers.ts).
   */
  inlineVideo?: boolean;
  /**
   * How the vendor signs its callbacks, when it does: the gateway then refuses (401) a callback
   * whose signature does not verify against the vendor's published keys.
   */
  callbackSignature?: CallbackSignature;
  /** Vendor-specific 400s (value ranges, model-only options). Throws a GatewayError. */
  validate?(input: CreateInput): void;
  /** The seconds the job is held for at create (requested, native override, or the model default). */
  estimateSeconds(input: Omit<CreateInput, 'media'>): number;
  /** URLs the gateway must fetch and pass as bytes (e.g. Vertex wants base64 images). */
  inlineMedia?(input: Omit<CreateInput, 'media'>): string[];
  buildCreate(input: CreateInput, up: Upstream): UpstreamRequest;
  /** Reads the upstream task id from a 2xx create answer, and what else it said (see CreatedTask). */
  parseCreate(res: UpstreamResponse, input: CreateInput, up: Upstream): CreatedTask;
  buildPoll(task: TaskRef, up: Upstream): UpstreamRequest;
  /**
   * Maps a 2xx poll answer to a status, or asks for one more request (fal: status, then result).
   * `vendorData` given with `next` is kept: the final status's vendor_data is laid over it, so
   * nothing a multi-step poll saw is lost. Unknown vendor statuses must map to processing.
   */
  parsePoll(res: UpstreamResponse, task: TaskRef, up: Upstream): VendorStatus | { next: UpstreamRequest; vendorData?: JsonObject };
  /** The request that fetches a finished video's bytes (adds auth where the vendor's URL needs it). */
  buildContent(task: TaskRef, output: VideoOutput, up: Upstream): UpstreamRequest;
  /**
   * A new task that remixes a finished one with a new prompt (OpenAI's POST /videos/{id}/remix);
   * its answer is read by `parseCreate`. Absent: the vendor cannot remix.
   */
  buildRemix?(task: TaskRef, prompt: string, up: Upstream): UpstreamRequest;
  /** Edits and extensions of a finished or uploaded video. Absent: the vendor offers neither. */
  derive?: VideoDerivations;
  /** Characters made from a video. Absent: the vendor has none. */
  characters?: VideoCharacters;
  /**
   * The vendor's call that stops a task still running or queued. A 2xx answer means the task will
   * not produce (and not bill) a video. Absent: the vendor has no such call.
   */
  buildCancel?(task: TaskRef, up: Upstream): UpstreamRequest;
  /** The request for a finished job's preview asset (thumbnail, spritesheet) where the vendor makes one. */
  buildVariant?(task: TaskRef, variant: 'thumbnail' | 'spritesheet', up: Upstream): UpstreamRequest;
  /** Classifies a non-2xx answer (create, poll or content). */
  classifyError(res: UpstreamResponse): UpstreamVerdict;
  /** Optional credential source (e.g. OAuth token minting); static keys go straight into headers. */
  credentials?(up: Upstream, executor: Executor): CredentialSource;
  /** The header under which the vendor takes the caller's request id (OpenAI: X-Client-Request-Id). */
  requestIdHeader?: string;
  /**
   * One cheap authenticated request for `gateway check --probe`, never a create (that would be billed).
   * Without it, the probe is this vendor's poll of a task id that does not exist: a 404 proves the key.
   */
  buildProbe?(up: Upstream, upstreamModel: string): UpstreamRequest;
}

export type { GatewayError, CredentialSource };

/**
 * What one video model accepts and can do, declared in its vendor's folder (capabilities.ts) from
 * the same tables the adapter validates with, overridable per model in the config
 * (`models.<name>.video`). Served by GET /v1/models and checked at create, so the two agree.
 * A list left out means "not restricted by the gateway" (the vendor judges).
 */
export interface VideoCapabilities {
  /** Durations in seconds the model accepts. */
  durations?: number[];
  /** Seconds generated when none is asked for. */
  default_seconds: number;
  /** `WxH` sizes the model accepts. */
  sizes?: string[];
  /** Size used when none is asked for (shown as the job's `size`). */
  default_size?: string;
  /** Resolution tiers (`720p`) and aspect ratios (`16:9`) the model accepts. */
  resolutions?: string[];
  aspect_ratios?: string[];
  first_frame: boolean;
  last_frame: boolean;
  /** Soft reference media (input_references). */
  references: boolean;
  /** Generates an audio track. */
  audio: boolean;
  /**
   * Takes a video as input (an uploaded MP4/MOV/WebM `input_reference`, or an `input_references`
   * item of type video): Veo extends it, Azure's jobs API inpaints from it, wan r2v and Seedance 2.0
   * take it as a reference. Absent means no.
   */
  video_reference?: boolean;
  /** POST /v1/videos/{id}/remix. */
  remix: boolean;
  /** POST /v1/videos/edits, /v1/videos/extensions and /v1/videos/characters. Absent means no. */
  edit?: boolean;
  extend?: boolean;
  characters?: boolean;
  /** A processing job can be cancelled upstream (DELETE releases the hold at no charge). */
  cancel: boolean;
  /** Content variants served for a finished job (`video` always). */
  variants: Array<'video' | 'thumbnail' | 'spritesheet'>;
  /** How long the vendor keeps a finished video; null when the gateway or the client's bucket keeps it. */
  content_ttl_seconds: number | null;
}

