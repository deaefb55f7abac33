import { errors } from '../core/errors.js';
import { messageId, receiverKey, videoEvent } from '../webhooks/events.js';
import type { SqlDriver, SqlExecutor } from './driver.js';
import type { SqlValue } from './driver.js';
import { clampLimit } from './ledger.js';
import { dueDeliveryRows } from './webhook-due.js';
import { int, intOrNull } from './rows.js';
import type { Row } from './driver.js';
import type { DeliveryAttempt, OutboxRecord, OutboxState, VideoEventType, WebhookEndpoint, WebhookStore } from './webhook-types.js';

const str = (v: unknown) => String(v);
const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

function toEndpoint(r: Row): WebhookEndpoint {
  return {
    id: str(r.id),
    accountId: str(r.account_id),
    url: str(r.url),
    events: JSON.parse(str(r.events)) as VideoEventType[],
    secret: str(r.secret),
    createdAt: int(r.created_at),
    disabledAt: intOrNull(r.disabled_at),
  };
}

function toOutbox(r: Row): OutboxRecord {
  return {
    id: str(r.id),
    eventId: str(r.event_id),
    accountId: str(r.account_id),
    endpointId: strOrNull(r.endpoint_id),
    url: str(r.url),
    eventType: str(r.event_type),
    payload: str(r.payload),
    state: str(r.state) as OutboxState,
    attempts: int(r.attempts),
    nextAttemptAt: int(r.next_attempt_at),
    leaseUntil: intOrNull(r.lease_until),
    createdAt: int(r.created_at),
    deliveredAt: intOrNull(r.delivered_at),
  };
}

function toAttempt(r: Row): DeliveryAttempt {
  return {
    id: int(r.id),
    outboxId: str(r.outbox_id),
    endpointId: strOrNull(r.endpoint_id),
    attempt: int(r.attempt),
    status: intOrNull(r.status),
    error: strOrNull(r.error),
    latencyMs: int(r.latency_ms),
    createdAt: int(r.created_at),
  };
}

const INSERT_OUTBOX = `INSERT INTO webhook_outbox
  (id, event_id, account_id, endpoint_id, url, event_type, payload, state, attempts, next_attempt_at, lease_until, created_at, delivered_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, NULL, ?, NULL)`;

/**
 * Writes one outbox row per receiver of the event, inside the settlement's transaction: one per
 * subscribed active endpoint of the account, and one for the job's own target. Endpoints at the
 * same URL are one receiver (a secret rotation overlaps an old and a new endpoint): it gets one row,
 * filed under the oldest of them, which the dispatcher signs with all their secrets. A second row
 * would carry a second webhook-id, which receivers deduplicate on, so they would act twice.
 *
 * A job's own target that is the URL of an active endpoint is that endpoint's receiver (sent once,
 * signed with its secrets). Any other is written even when the account has no active endpoint any
 * more (they were all disabled while the job ran): the dispatcher then records it as failed, with
 * the reason, rather than the event vanishing. It is filed under the account's first active
 * endpoint, or else its newest one, so that it shows in a delivery log; the dispatcher picks the
 * signing secret when it sends it.
 */
export async function enqueueVideoEvent(
  tx: SqlExecutor,
  e: { accountId: string; type: VideoEventType; videoId: string; webhookUrl: string | null; now: number },
): Promise<void> {
  const endpoints = (await tx.query('SELECT * FROM webhook_endpoints WHERE account_id = ? ORDER BY created_at, id', [e.accountId])).map(toEndpoint);
  const active = endpoints.filter((p) => p.disabledAt === null);
  const targets: Array<{ endpointId: string | null; url: string }> = [];
  const receivers = new Set<string>();
  const add = (p: WebhookEndpoint) => {
    if (receivers.has(receiverKey(p.url))) return;
    receivers.add(receiverKey(p.url));
    // The endpoint's URL as registered: the dispatcher knows the row for that endpoint's own by it.
    targets.push({ endpointId: p.id, url: p.url });
  };
  for (const p of active) if (p.events.includes(e.type)) add(p);
  if (e.webhookUrl) {
    const own = active.find((p) => receiverKey(p.url) === receiverKey(e.webhookUrl!));
    if (own) add(own);
    else targets.push({ endpointId: (active[0] ?? endpoints.at(-1))?.id ?? null, url: e.webhookUrl });
  }
  if (targets.length === 0) return;
  const event = videoEvent(e.type, e.videoId, e.now);
  for (const t of targets) {
    await tx.run(INSERT_OUTBOX, [messageId(), event.id, e.accountId, t.endpointId, t.url, e.type, event.json, e.now, e.now]);
  }
}

/** Added to the logged error of an attempt whose lease was gone by the time it ended. */
const STALE_NOTE = 'not recorded: the lease on this delivery had expired and it was taken over';

export function webhookOps(db: SqlDriver): WebhookStore {
  return {
    async createWebhookEndpoint(e, maxActive) {
      return db.transaction(async (tx) => {
        if (maxActive !== undefined) {
          // The count and the insert must be one step: two registrations that both counted 9 would
          // otherwise both insert. SQLite's write transaction (BEGIN IMMEDIATE) already runs alone;
          // PostgreSQL's READ COMMITTED does not, so registrations for one account queue on a lock
          // of their own (not the account row, which every charge updates), held until commit.
          if (db.dialect === 'postgres') await tx.query(`SELECT pg_advisory_xact_lock(hashtext('webhook_endpoints'), hashtext(?))`, [e.accountId]);
          const [counted] = await tx.query('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE account_id = ? AND disabled_at IS NULL', [e.accountId]);
          if (int(counted!.n) >= maxActive) {
            throw errors.invalidRequest(`An account has at most ${maxActive} active webhook endpoints.`, 'url', 'too_many_endpoints');
          }
        }
        const rows = await tx.query(
          'INSERT INTO webhook_endpoints (id, account_id, url, events, secret, created_at, disabled_at) VALUES (?, ?, ?, ?, ?, ?, NULL) RETURNING *',
          [e.id, e.accountId, e.url, JSON.stringify(e.events), e.secret, e.createdAt],
        );
        return toEndpoint(rows[0]!);
      });
    },

    async listWebhookEndpoints(accountId) {
      const rows =
        accountId === undefined
          ? await db.query('SELECT * FROM webhook_endpoints ORDER BY created_at, id')
          : await db.query('SELECT * FROM webhook_endpoints WHERE account_id = ? ORDER BY created_at, id', [accountId]);
      return rows.map(toEndpoint);
    },

    async getWebhookEndpoint(id) {
      const rows = await db.query('SELECT * FROM webhook_endpoints WHERE id = ?', [id]);
      return rows.length ? toEndpoint(rows[0]!) : undefined;
    },

    async disableWebhookEndpoint(id, now) {
      return (await db.run('UPDATE webhook_endpoints SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL', [now, id])) === 1;
    },

    async dueDeliveries(now, opts) {
      // Fair across accounts (every account's first due row before anyone's second), so one account
      // with a large backlog cannot fill the page, and the dispatcher's slots; read off an index per
      // account, so that backlog costs nothing here (webhook-due.ts).
      return dueDeliveryRows(db, now, clampLimit(opts.limit, 10), Math.max(1, Math.floor(opts.perAccount)));
    },

    async leaseDelivery(id, now, leaseMs) {
      // Compare-and-swap on the lease: of two instances that saw the same row, one wins. A lease is
      // taken only once the previous one has ended, so the new one ends later and lease_until tells
      // this claim apart from the one it replaced (recording checks it).
      const rows = await db.query(
        `UPDATE webhook_outbox SET lease_until = ?
          WHERE id = ? AND state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?) RETURNING *`,
        [now + Math.max(1, leaseMs), id, now, now],
      );
      return rows.length ? toOutbox(rows[0]!) : undefined;
    },

    async releaseDelivery(id, leaseUntil) {
      return (await db.run(`UPDATE webhook_outbox SET lease_until = NULL WHERE id = ? AND lease_until = ? AND state = 'pending'`, [id, leaseUntil])) === 1;
    },

    async deferDelivery(id, now, until) {
      return (
        (await db.run(
          `UPDATE webhook_outbox SET next_attempt_at = ?
            WHERE id = ? AND state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)`,
          [until, id, now, now],
        )) === 1
      );
    },

    async recordDeliveryAttempt(outboxId, a, outcome, leaseUntil) {
      return db.transaction(async (tx) => {
        // Only the holder of the lease this attempt was made under moves the row on: an attempt that
        // outlived its lease (another instance has taken the row since, or settled it) must not
        // overwrite what that one recorded.
        const held = `WHERE id = ? AND lease_until = ? AND state = 'pending'`;
        const moved =
          outcome.state === 'delivered'
            ? await tx.run(`UPDATE webhook_outbox SET state = 'delivered', attempts = ?, delivered_at = ?, lease_until = NULL ${held}`, [a.attempt, a.now, outboxId, leaseUntil])
            : outcome.state === 'pending'
              ? await tx.run(`UPDATE webhook_outbox SET attempts = ?, next_attempt_at = ?, lease_until = NULL ${held}`, [a.attempt, outcome.nextAttemptAt, outboxId, leaseUntil])
              : await tx.run(`UPDATE webhook_outbox SET state = 'failed', attempts = ?, lease_until = NULL ${held}`, [a.attempt, outboxId, leaseUntil]);
        const recorded = moved === 1;
        // The attempt happened either way (the receiver may have seen it), so it is always logged.
        const error = recorded ? a.error : a.error ? `${a.error}; ${STALE_NOTE}` : STALE_NOTE;
        await tx.run(
          'INSERT INTO webhook_attempts (outbox_id, endpoint_id, attempt, status, error, latency_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          [outboxId, a.endpointId, a.attempt, a.status, error, a.latencyMs, a.now],
        );
        return recorded;
      });
    },

    async listOutbox(f) {
      const where: string[] = [];
      const params: SqlValue[] = [];
      if (f.endpointId !== undefined) (where.push('endpoint_id = ?'), params.push(f.endpointId));
      if (f.accountId !== undefined) (where.push('account_id = ?'), params.push(f.accountId));
      const rows = await db.query(
        `SELECT * FROM webhook_outbox ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id LIMIT ?`,
        [...params, clampLimit(f.limit, 100)],
      );
      return rows.map(toOutbox);
    },

    async listDeliveryAttempts(f) {
      const where: string[] = [];
      const params: SqlValue[] = [];
      if (f.endpointId !== undefined) (where.push('endpoint_id = ?'), params.push(f.endpointId));
      if (f.outboxId !== undefined) (where.push('outbox_id = ?'), params.push(f.outboxId));
      const rows = await db.query(
        `SELECT * FROM webhook_attempts ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`,
        [...params, clampLimit(f.limit, 100)],
      );
      return rows.map(toAttempt);
    },

    async purgeFinishedDeliveries(before, limit) {
      // Through the (state, next_attempt_at) index; a finished row's next_attempt_at is when its last
      // attempt was due, so a row goes once that is older than the retention.
      const n = Math.max(1, Math.min(1_000, Math.floor(limit)));
      const ids: string[] = [];
      for (const state of ['delivered', 'failed']) {
        if (ids.length >= n) break;
        const rows = await db.query('SELECT id FROM webhook_outbox WHERE state = ? AND next_attempt_at < ? LIMIT ?', [state, before, n - ids.length]);
        for (const r of rows) ids.push(str(r.id));
      }
      if (ids.length === 0) return 0;
      const marks = ids.map(() => '?').join(', ');
      return db.transaction(async (tx) => {
        await tx.run(`DELETE FROM webhook_attempts WHERE outbox_id IN (${marks})`, ids);
        // Still finished: a row cannot leave those states, but the check keeps the delete exact.
        return tx.run(`DELETE FROM webhook_outbox WHERE id IN (${marks}) AND state IN ('delivered', 'failed')`, ids);
      });
    },
  };
}
