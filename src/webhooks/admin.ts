import { randomUUID } from 'node:crypto';
import type { AdminService } from '../admin/service.js';
import type { Clock } from '../core/clock.js';
import { errors } from '../core/errors.js';
import { unsafeTargetReason } from '../http/guarded-agent.js';
import type { Store } from '../store/types.js';
import type { DeliveryAttempt, OutboxRecord, VideoEventType, WebhookEndpoint } from '../store/webhook-types.js';
import { VIDEO_EVENTS } from './events.js';
import { newSecret } from './signing.js';

/** At most this many endpoints per account (bounded fan-out per event). */
const MAX_ENDPOINTS = 10;

/** Webhook endpoint administration, shared by the admin API and the CLI. */
export class WebhookAdmin {
  constructor(
    private readonly admin: AdminService,
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly allowPrivateNetworks: boolean,
  ) {}

  /** Registers an endpoint; the returned record holds the secret, which is shown this once. */
  async register(input: { account: string; url: string; events?: string[] }): Promise<WebhookEndpoint> {
    const account = await this.admin.account(input.account);
    await checkTarget(input.url, 'url', this.allowPrivateNetworks);
    const events = input.events && input.events.length > 0 ? [...new Set(input.events)] : [...VIDEO_EVENTS];
    for (const e of events) if (!VIDEO_EVENTS.includes(e as VideoEventType)) throw errors.invalidRequest(`Unknown event '${e}' (known: ${VIDEO_EVENTS.join(', ')}).`, 'events');
    // The store counts and inserts atomically (a count read here first let concurrent registrations pass the cap).
    return this.store.createWebhookEndpoint({
      id: `we_${randomUUID().replace(/-/g, '')}`,
      accountId: account.id,
      url: input.url,
      events: events as VideoEventType[],
      secret: newSecret(),
      createdAt: this.clock.now(),
    }, MAX_ENDPOINTS);
  }

  async list(accountName?: string): Promise<WebhookEndpoint[]> {
    const id = accountName ? (await this.admin.account(accountName)).id : undefined;
    return this.store.listWebhookEndpoints(id);
  }

  async endpoint(id: string): Promise<WebhookEndpoint> {
    const e = await this.store.getWebhookEndpoint(id);
    if (!e) throw errors.notFound(`No webhook endpoint '${id}'.`, 'webhook_not_found');
    return e;
  }

  async disable(id: string): Promise<WebhookEndpoint> {
    await this.endpoint(id);
    if (!(await this.store.disableWebhookEndpoint(id, this.clock.now()))) throw errors.invalidRequest('That endpoint is already disabled.', 'id', 'already_disabled');
    return this.endpoint(id);
  }

  /** The endpoint's delivery log: each event's state and every attempt (newest first). */
  async deliveries(id: string, limit = 100): Promise<{ events: OutboxRecord[]; attempts: DeliveryAttempt[] }> {
    await this.endpoint(id);
    const [events, attempts] = await Promise.all([
      this.store.listOutbox({ endpointId: id, limit }),
      this.store.listDeliveryAttempts({ endpointId: id, limit }),
    ]);
    return { events, attempts };
  }
}

/** A 400 naming `param` when the URL may not be a webhook target. */
export async function checkTarget(url: string, param: string, allowPrivateNetworks: boolean): Promise<void> {
  const reason = await unsafeTargetReason(url, allowPrivateNetworks);
  if (reason) throw errors.invalidRequest(`'${param}' ${reason}.`, param, 'invalid_webhook_url');
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/** Shapes shown by the admin API and CLI (the secret only when `withSecret`). */
export const webhookView = {
  endpoint: (e: WebhookEndpoint, withSecret = false) => ({
    id: e.id,
    account_id: e.accountId,
    url: e.url,
    events: e.events,
    ...(withSecret ? { secret: e.secret } : {}),
    created_at: iso(e.createdAt),
    disabled_at: iso(e.disabledAt),
  }),
  event: (o: OutboxRecord) => ({
    id: o.id,
    event_id: o.eventId,
    type: o.eventType,
    url: o.url,
    state: o.state,
    attempts: o.attempts,
    next_attempt_at: o.state === 'pending' ? iso(o.nextAttemptAt) : null,
    delivered_at: iso(o.deliveredAt),
    created_at: iso(o.createdAt),
  }),
  attempt: (a: DeliveryAttempt) => ({
    delivery_id: a.outboxId,
    attempt: a.attempt,
    status: a.status,
    error: a.error,
    latency_ms: a.latencyMs,
    at: iso(a.createdAt),
  }),
};
