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
  /** The endpoint whose secret signs it (a per-job target borrows the account's first endpoint). */
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
  createWebhookEndpoint(e: Omit<WebhookEndpoint, 'disabledAt'>): Promise<WebhookEndpoint>;
  listWebhookEndpoints(accountId?: string): Promise<WebhookEndpoint[]>;
  getWebhookEndpoint(id: string): Promise<WebhookEndpoint | undefined>;
  /** False when it does not exist or was already disabled. */
  disableWebhookEndpoint(id: string, now: number): Promise<boolean>;
  /**
   * Leases up to `limit` due pending deliveries to this caller (compare-and-swap per row, so two
   * instances never take the same one).
   */
  claimDeliveries(now: number, limit: number, leaseMs: number): Promise<OutboxRecord[]>;
  /** Logs an attempt and moves the row on: delivered, retry at `nextAttemptAt`, or failed for good. */
  recordDeliveryAttempt(
    outboxId: string,
    a: { endpointId: string | null; attempt: number; status: number | null; error: string | null; latencyMs: number; now: number },
    outcome: { state: 'delivered' } | { state: 'pending'; nextAttemptAt: number } | { state: 'failed' },
  ): Promise<void>;
  listOutbox(filter: { endpointId?: string; accountId?: string; limit?: number }): Promise<OutboxRecord[]>;
  listDeliveryAttempts(filter: { endpointId?: string; outboxId?: string; limit?: number }): Promise<DeliveryAttempt[]>;
}
