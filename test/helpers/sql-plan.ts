import type { SqlDriver, SqlValue } from '../../src/store/driver.js';

/** What ran through a `noting` driver: each statement's SQL and parameters, to look at its plan. */
export type Noted = Array<{ sql: string; params: readonly SqlValue[] }>;

/** A driver that notes the statements queried through it. */
export function noting(db: SqlDriver, seen: Noted): SqlDriver {
  return {
    dialect: db.dialect,
    query: (sql, params = []) => (seen.push({ sql, params }), db.query(sql, params)),
    run: (sql, params) => db.run(sql, params),
    exec: (script) => db.exec(script),
    // Statements inside a transaction are noted too.
    transaction: (fn) =>
      db.transaction((tx) => fn({ query: (sql, params = []) => (seen.push({ sql, params }), tx.query(sql, params)), run: (sql, params) => tx.run(sql, params), exec: (script) => tx.exec(script) })),
    session: (fn) => db.session(fn),
    close: () => db.close(),
  };
}

/** One node of PostgreSQL's `EXPLAIN (ANALYZE, FORMAT JSON)` output, the fields the plan tests read. */
export interface PlanNode {
  'Node Type'?: string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Rows a PostgreSQL plan read from `table`: those its scans returned plus those they filtered out, over all loops. */
export function rowsReadFrom(table: string, node: PlanNode): number {
  const loops = node['Actual Loops'] ?? 1;
  const own =
    node['Relation Name'] === table
      ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * loops
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsReadFrom(table, child), 0);
}

/** Every node of the plan, depth first. */
export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
