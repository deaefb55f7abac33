import { constraintKind, type SqlDriver, type SqlExecutor } from './driver.js';
import { adjustInTx } from './budgets.js';
import { insertEntry } from './ledger.js';
import { enqueueVideoEvent } from './webhooks.js';
import type { VideoEventType } from './webhook-types.js';
import { int } from './rows.js';

/** Every settling CAS returns these, so the ledger rows, the key's budget and the event can follow. */
export const SETTLED_COLUMNS = 'account_id, hold_micros, key_id, model, upstream, public_id, created_at, webhook_url';

/** What a settling compare-and-swap hands back: who to credit and how much was held. */
export interface Settled {
  accountId: string;
  hold: number;
  keyId: string;
  model: string;
  upstream: string | null;
  publicId: string | null;
  createdAt: number;
  webhookUrl: string | null;
}

/**
 * Runs a state compare-and-swap (an UPDATE ... RETURNING account_id, hold_micros) and, when it
 * won, the ledger entries and balance move in the same transaction. Returns false when the CAS
 * found the job in another state, or when the ledger already held one of the entries (the
 * unique (ref, kind) index refused it and everything was rolled back). `reconcile`, when given, is
 * the reason of a reconciliation record written in the same transaction: once, by the settlement
 * that won, however many instances tried.
 */
export async function settleJob(
  db: SqlDriver,
  cas: (tx: SqlExecutor) => Promise<Settled | undefined>,
  entries: (s: Settled) => Array<{ kind: 'release' | 'capture'; delta: number; note: string | null }>,
  jobId: string,
  now: number,
  event?: VideoEventType,
  reconcile?: string,
): Promise<boolean> {
  try {
    return await db.transaction(async (tx) => {
      const won = await cas(tx);
      if (!won) return false;
      const rows = entries(won);
      const total = rows.reduce((sum, e) => sum + e.delta, 0);
      // The key's budget counted the hold; from now on it counts what was really spent (total is
      // the net change: -capture + hold). Same period as the hold: the job's creation time. Before
      // the account's row, in the order a create takes them (reserveInTx, then the balance): on
      // PostgreSQL a create and a settlement of one key taking them the other way round could each
      // hold what the other waits for, and one of them would end as a deadlock.
      await adjustInTx(tx, won.keyId, 0 - total, won.createdAt);
      // The account's row before the ledger rows, as every ledger write takes it, even when the net
      // is 0 (a job billed exactly what it held): on PostgreSQL the rows' trigger then locks the
      // key's running totals (rollups.ts) after the account, never before it, so a settlement and a
      // charge of one key cannot each hold what the other waits for.
      await tx.run('UPDATE accounts SET balance = balance + ? WHERE id = ?', [total, won.accountId]);
      const by = { keyId: won.keyId, model: won.model, upstream: won.upstream };
      for (const e of rows) {
        await insertEntry(tx, db.dialect, { accountId: won.accountId, kind: e.kind, delta: e.delta, ref: jobId, note: e.note, now, by });
      }
      // The outbox row commits with the settlement or not at all: no event without a settled job,
      // no settled job without its event.
      if (event && won.publicId) {
        await enqueueVideoEvent(tx, { accountId: won.accountId, type: event, videoId: won.publicId, webhookUrl: won.webhookUrl, now });
      }
      if (reconcile !== undefined) {
        await tx.run('INSERT INTO reconcile (job_id, upstream, reason, created_at) VALUES (?, ?, ?, ?)', [jobId, won.upstream ?? '(unknown)', reconcile, now]);
      }
      return true;
    });
  } catch (e) {
    if (constraintKind(e) === 'unique') return false;
    throw e;
  }
}

/** The row a settling CAS returned (its SETTLED_COLUMNS), or undefined when it found the job in another state. */
export function settledFrom(rows: Array<Record<string, unknown>>): Settled | undefined {
  const r = rows[0];
  if (!r) return undefined;
  const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));
  return {
    accountId: String(r.account_id),
    hold: int(r.hold_micros),
    keyId: String(r.key_id),
    model: String(r.model),
    upstream: strOrNull(r.upstream),
    publicId: strOrNull(r.public_id),
    createdAt: int(r.created_at),
    webhookUrl: strOrNull(r.webhook_url),
  };
}
