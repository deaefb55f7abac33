/** Store contract for webhook endpoints, the delivery outbox and its attempt log. */

export type VideoEventType = 'video.completed' | 'video.failed' | 'video.cancelled';

export interface WebhookEndpoint {
  id: string;
  accountId: string;
  url: string;
  /** Event types delivered to this endpoint. */
  events: VideoEventType[];
  /** whsec_... signing secret (shown to the account once, at registration). */
  secret: string;
  createdAt: number;
  disabledAt: number | null;
}

export type OutboxState = 'pending' | 'delivered' | 'failed';

/** One event for one target; retried until delivered or out of attempts. */
export interface OutboxRecord {
  /** The Standard Webhooks message id (webhook-id), the same on every retry. */
  id: string;
  eventId: string;
  accountId: string;
  /**
   * The endpoint whose delivery log shows it. For an endpoint's own event, the endpoint whose secret
   * signs it. A job's own target (a URL other than this endpoint's) is signed at delivery by the
   * account's active endpoint: this one while it is active, else the account's first active one.
   */
  endpointId: string | null;
  url: string;
  eventType: string;
  /** The exact JSON text that is signed and sent. */
  payload: string;
  state: OutboxState;
  attempts: number;
  nextAttemptAt: number;
  leaseUntil: number | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** A due delivery as the dispatcher sees it before leasing it (enough to apply its caps). */
export interface DueDelivery {
  id: string;
  accountId: string;
  url: string;
}

export interface DeliveryAttempt {
  id: number;
  outboxId: string;
  endpointId: string | null;
  attempt: number;
  /** HTTP status, or null when no answer came (timeout, refused, blocked). */
  status: number | null;
  error: string | null;
  latencyMs: number;
  createdAt: number;
}

export interface WebhookStore {
  /**
   * With `maxActive`, counting the account's active endpoints and inserting are one atomic step:
   * a 400 `too_many_endpoints` (param `url`) when it already has that many, however many
   * registrations run at once, on any number of instances.
   */
  createWebhookEndpoint(e: Omit<WebhookEndpoint, 'disabledAt'>, maxActive?: number): Promise<WebhookEndpoint>;
  listWebhookEndpoints(accountId?: string): Promise<WebhookEndpoint[]>;
  getWebhookEndpoint(id: string): Promise<WebhookEndpoint | undefined>;
  /** False when it does not exist or was already disabled. */
  disableWebhookEndpoint(id: string, now: number): Promise<boolean>;
  /**
   * Due pending deliveries nobody holds, oldest first but fair across accounts: each account's
   * first due row comes before any account's second, and so on, at most `perAccount` rows per
   * account. Nothing is leased: see `leaseDelivery`.
   */
  dueDeliveries(now: number, opts: { limit: number; perAccount: number }): Promise<DueDelivery[]>;
  /**
   * Leases one due delivery to this caller until `now + leaseMs` (compare-and-swap, so of two
   * instances that saw the same row one wins). The returned row's `leaseUntil` identifies this
   * claim: recording, releasing and deferring only act while the row still carries it.
   */
  leaseDelivery(id: string, now: number, leaseMs: number): Promise<OutboxRecord | undefined>;
  /** Gives a leased row back untried (no attempt counted), due again at once. False when the lease was lost. */
  releaseDelivery(id: string, leaseUntil: number): Promise<boolean>;
  /**
   * Puts a due row nobody holds off until `until` without spending an attempt (a receiver that is
   * backed off). False when the row was meanwhile leased, settled or moved.
   */
  deferDelivery(id: string, now: number, until: number): Promise<boolean>;
  /**
   * Logs an attempt and, when the row still carries the lease `leaseUntil` and is pending, moves it
   * on: delivered, retry at `nextAttemptAt`, or failed for good. Returns false when the lease was
   * lost (it expired and another instance took the row, or the row settled meanwhile): then only
   * the attempt's log line is written, saying its outcome was not recorded.
   */
  recordDeliveryAttempt(
    outboxId: string,
    a: { endpointId: string | null; attempt: number; status: number | null; error: string | null; latencyMs: number; now: number },
    outcome: { state: 'delivered' } | { state: 'pending'; nextAttemptAt: number } | { state: 'failed' },
    leaseUntil: number,
  ): Promise<boolean>;
  listOutbox(filter: { endpointId?: string; accountId?: string; limit?: number }): Promise<OutboxRecord[]>;
  listDeliveryAttempts(filter: { endpointId?: string; outboxId?: string; limit?: number }): Promise<DeliveryAttempt[]>;
  /**
   * Deletes up to `limit` finished deliveries (delivered or failed) whose last attempt was due
   * before `before`, with their attempt logs; returns how many deliveries went. Pending ones stay.
   */
  purgeFinishedDeliveries(before: number, limit: number): Promise<number>;
}
