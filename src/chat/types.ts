import type { Writable } from 'node:stream';
import type { Reservations } from '../billing/reservations.js';
import type { ChargeBatcher } from '../billing/charges.js';
import type { KeyBudgets } from '../billing/key-budgets.js';
import type { AuthContext } from '../auth/types.js';
import type { Clock } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import type { Executor } from '../http/executor.js';
import type { UpstreamClient } from '../http/upstream-client.js';
import type { Upstream } from '../http/types.js';
import type { LimitScope, Quota, RateLimiter } from '../limits/types.js';
import type { Catalog, ModelInfo } from '../routing/catalog.js';
import type { Store } from '../store/types.js';
import type { GatewayError } from '../core/errors.js';
import type { UsageBounds } from './believable-usage.js';
import type { LargeCompletions } from './large-completions.js';

export interface ChatLogger {
  warn(msg: string): void;
  error(msg: string): void;
}

export interface ChatServiceDeps {
  catalog: Catalog;
  store: Pick<Store, 'charge' | 'canAfford' | 'getAccount' | 'reserveKeySpend' | 'adjustKeySpend' | 'recordReconcile'>;
  executor: Executor;
  /** The one upstream client; defaults to one over `executor`. */
  client?: UpstreamClient;
  limiter: RateLimiter;
  clock: Clock;
  /** The configured chat quota (limits.defaults.chat). */
  defaults: Quota;
  /**
   * Output tokens per choice held for a request without max_tokens whose model declares no
   * max_output_tokens (config chat.default_output_reserve_tokens).
   */
  defaultOutputReserveTokens?: number;
  logger?: ChatLogger;
  /** In-flight spending shared with embeddings; defaults to one of its own. */
  reservations?: Reservations;
  /**
   * Batches concurrent charges into one transaction; defaults to charging one by one. A charge whose
   * write failed for the database's sake is handed to its background queue (`submit`), retried there.
   */
  charges?: Pick<ChargeBatcher, 'charge' | 'submit'>;
  /** Per-key budgets; defaults to one over `store`. */
  budgets?: KeyBudgets;
  /** The worker large answers are prepared in (large-completions.ts); defaults to one of its own. */
  largeAnswers?: LargeCompletions;
}

export type ChatResult =
  | { kind: 'json'; status: number; headers: Record<string, string>; body: Buffer }
  | {
      kind: 'stream';
      status: number;
      headers: Record<string, string>;
      /**
       * Writes the head and every event to `sink`, then bills; resolves when the stream is over.
       * `cutBy` says why the gateway cut the stream short, if it did (a shutdown): its last event.
       */
      relay(sink: StreamSink, cutBy?: () => GatewayError | undefined): Promise<void>;
    };

/** What the stream is written to: an http.ServerResponse in production. */
export type StreamSink = Writable & {
  writeHead(status: number, headers: Record<string, string>): unknown;
  flushHeaders?(): void;
};

/** What one request has reserved, so every exit path settles it exactly once. */
export interface Reservation {
  ctx: AuthContext;
  model: ModelInfo;
  scopes: LimitScope[];
  /** Tokens counted at admission (prompt estimate and output allowance), corrected by the real usage. */
  estimate: number;
  /** The admission's window second, handed back with the token correction (RateLimiter.adjustTokens). */
  admittedSecond: number | undefined;
  promptEstimate: number;
  /** What the usage billed may be at most (believable-usage.ts). */
  bounds: UsageBounds;
  /** What was charged once settled (lowers this process's view of the balance). */
  charged?: number;
  /** The request's x-request-id, sent on as OpenAI's X-Client-Request-Id. */
  requestId?: string;
}

/** One chat completion on its way upstream: the reservation, where it may go, and what to send. */
export interface ChatCall {
  r: Reservation;
  candidates: Upstream[];
  body: JsonObject;
  /** The rate-limit headers of the admission, returned with the answer. */
  limitHeaders: Record<string, string>;
  signal?: AbortSignal;
  /** The request is past its point of no return (ChatService.create's `commit`). */
  commit?: () => void;
}
