import type { Json, JsonObject } from '../core/json.js';
import type { CallSignal } from './call-signal.js';
import type { AnswerMedia } from './inline-media.js';

/** One configured upstream (an account at a vendor), as the adapters and the executor see it. */
export interface Upstream {
  name: string;
  vendor: string;
  /** The vendor's origin, without a trailing slash; adapters append the vendor's documented paths. */
  baseUrl: string;
  apiKey?: string;
  models: readonly string[];
  priority: number;
  weight: number;
  timeoutMs: number;
  /** Vendor-specific settings from the config (e.g. Vertex project/location, Azure api_version). */
  options: JsonObject;
  /** The names of the operator's resources in its configured hosts (protocols/resource-hosts.ts), hidden from clients. */
  resourceNames?: readonly string[];
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What an adapter asks the executor to send. Adapters never do I/O themselves. */
export interface UpstreamRequest {
  method: HttpMethod;
  /** Absolute URL. */
  url: string;
  headers: Record<string, string>;
  /** A JSON value is serialised by the executor; a string or Buffer is sent as it is. */
  body?: Json | string | Buffer;
  /**
   * The JSON body may carry media inline (an uploaded file as base64, tens of megabytes): its long
   * strings are sent from the strings themselves, not from a serialised copy (http/json-body.ts).
   */
  bodyMedia?: boolean;
  /** Per-request timeout override; defaults to the upstream's timeout. */
  timeoutMs?: number;
  /** A smaller cap than `server.max_answer_bytes` on an answer read whole (`send`, `sendRaw`): larger ones are abandoned unread. */
  maxAnswerBytes?: number;
  /** Count every byte of the answer against the answer budget, a small answer's too (one call of a fan-out). */
  meterAll?: boolean;
  /**
   * The answer may carry media inline (a video as a base64 string): it is read under the configured
   * cap, its media strings are lifted out before it is parsed, and the rest may be at most
   * `maxRestBytes` (http/upstream-answer.ts). The answer's `json` then holds placeholders for them
   * (`media`). `send` only.
   */
  inlineMedia?: { maxRestBytes: number };
  /**
   * The answer's unknown fields reach clients as the vendor wrote them (a video job's vendor_data):
   * numbers a double cannot reproduce are parsed as markers (core/lossless-json.ts). `send` only.
   */
  losslessNumbers?: boolean;
}

/** What the executor hands back to an adapter's parser. */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string>;
  /** Parsed JSON when the body was JSON, else undefined. */
  json: Json | undefined;
  /** The raw body text (bounded), for error messages. */
  text: string;
  /**
   * Media lifted out of an answer asked for with `inlineMedia` (http/inline-media.ts): `json` holds
   * a placeholder string in place of each, which `media.text` turns into its base64 characters and
   * `media.restore` back into the string the upstream sent.
   */
  media?: AnswerMedia;
}

/**
 * How an adapter classifies a non-success answer. The core decides from the kind alone:
 * - client:     the caller's fault; never failed over; surfaces as 4xx with the vendor's (redacted) message
 * - moderation: content policy; at create a 400 with code content_policy_violation, later a failed job
 * - retryable:  5xx, 429 and the like; fail over to the next upstream
 * - auth:       our credentials for this upstream are wrong; fail over and log loudly
 */
export type UpstreamVerdict =
  | { kind: 'client'; status: 400 | 404 | 413 | 422; message: string; code?: string; param?: string }
  | { kind: 'moderation'; message: string; code?: string }
  | {
      kind: 'retryable';
      message: string;
      status: number;
      retryAfterSeconds?: number;
      /**
       * What the final 502 tells the client when this is the last failure, in place of the generic
       * text: set only by the gateway's own checks of an answer, never holding upstream text.
       */
      clientMessage?: string;
      /**
       * The failure follows from what the request asked (a `dimensions` the upstream did not honour) as
       * much as from the upstream: not counted against its circuit, so one client's requests cannot move
       * every account's traffic off an upstream that serves the others well.
       */
      sparesCircuit?: boolean;
      /** The answer's vectors had another length than the request's `dimensions` (embeddings/dimension-misses.ts). */
      dimensionsMissed?: boolean;
    }
  | { kind: 'auth'; message: string; status: number };

/** Issues a vendor's auth headers (e.g. a minted OAuth token); built once per upstream, cached inside. */
export interface CredentialSource {
  /**
   * `signal` is the call's own (a client's request, or the shutdown signal of a vendor poll): once it
   * aborts, the call stops waiting for a token being minted, with TransportError 'aborted'.
   */
  headers(signal?: CallSignal): Promise<Record<string, string>>;
}

/** A transport failure, raised by the executor (never by adapters). */
export class TransportError extends Error {
  constructor(
    readonly reason: 'timeout' | 'connect' | 'reset' | 'aborted' | 'too_large',
    message: string,
    /** True when the request may have reached the upstream before the failure. */
    readonly maybeSent: boolean,
  ) {
    super(message);
    this.name = 'TransportError';
  }
}
