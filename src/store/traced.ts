import { SpanKind } from '@opentelemetry/api';
import { traced } from '../ops/tracing.js';
import type { SqlDriver } from './driver.js';

/**
 * The driver with a client span around each transaction (ledger moves, job settlements, batched
 * charges). Single statements are not wrapped: they are many and short; the span would cost more
 * than it tells. With tracing off `traced` is a direct call.
 */
export function tracedTransactions(inner: SqlDriver): SqlDriver {
  const attributes = { 'db.system.name': inner.dialect === 'postgres' ? 'postgresql' : 'sqlite', 'db.operation.name': 'TRANSACTION' };
  return {
    dialect: inner.dialect,
    query: (sql, params) => inner.query(sql, params),
    run: (sql, params) => inner.run(sql, params),
    exec: (script) => inner.exec(script),
    transaction: (fn) => traced('store transaction', attributes, () => inner.transaction(fn), SpanKind.CLIENT),
    session: (fn) => inner.session(fn),
    ...(inner.canTakeWriteLock ? { canTakeWriteLock: (ms: number) => inner.canTakeWriteLock!(ms) } : {}),
    ...(inner.writesFailing ? { writesFailing: () => inner.writesFailing!() } : {}),
    close: () => inner.close(),
  };
}
