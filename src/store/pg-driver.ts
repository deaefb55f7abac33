import pg from 'pg';
import { errors, StoreUnavailableError } from '../core/errors.js';
import { toDollarParams, type Row, type SqlDriver, type SqlExecutor, type SqlSession, type SqlValue } from './driver.js';

export interface PostgresOptions {
  connectionString: string;
  /** Schema for all tables: created when missing and put first on every connection's search_path. */
  schema?: string;
  /** Pool size. */
  max?: number;
  /** Connections kept open however long they sit idle (see `KEPT_CONNECTIONS`). */
  min?: number;
  /** The longest a query waits for a connection, the connection's set-up included (ms). */
  connectTimeoutMs?: number;
  /** The longest a statement waits for its answer (ms); see `QUERY_TIMEOUT_MS`. */
  queryTimeoutMs?: number;
}

/**
 * A database that stops answering without closing its connections (a network partition, a host
 * that died, a firewall dropping packets) would otherwise hold each statement, and the connection
 * it runs on, until TCP gives up, minutes later: the pool's ten connections run out and every
 * request waits for its own deadline. A statement past this fails (503 store_unavailable) and its
 * connection is discarded, so the pool starts a fresh one; a transaction cut this way is rolled
 * back by the server when the connection goes. 30 s is far above any statement the gateway runs.
 */
const QUERY_TIMEOUT_MS = 30_000;
/** How long a query waits for a free connection or a new one to be set up. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Connections the pool keeps open through idle spells; the others close after pg's 10 s idle
 * timeout. Without any, the first requests after a quiet spell of 10 s each waited for a new
 * connection (a TCP connect, a backend started by the server, every statement prepared again)
 * before the key lookup, the balance read and the first charge write could run. Two cover what runs
 * at once on the request path: one charge write plus one lookup.
 */
const KEPT_CONNECTIONS = 2;

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export async function openPostgres(opts: PostgresOptions): Promise<SqlDriver> {
  const { schema } = opts;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw errors.internal(`Invalid PostgreSQL schema name: ${schema}`);
  }
  const connection: pg.ClientConfig = {
    connectionString: opts.connectionString,
    // Kept connections sit idle for as long as traffic pauses; a NAT or firewall that silently drops
    // an idle flow would otherwise leave the next query waiting on a dead socket for TCP's own
    // timeout (minutes). TCP keep-alive probes keep the flow known and find a dead one.
    keepAlive: true,
    keepAliveInitialDelayMillis: 30_000,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    // Set at connection start-up, so no pooled connection can ever run a query on another schema.
    options: schema ? `-c search_path=${schema}` : undefined,
  };
  const pool = new pg.Pool({
    ...connection,
    max: opts.max ?? 10,
    min: Math.min(opts.min ?? KEPT_CONNECTIONS, opts.max ?? 10),
    query_timeout: opts.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener that
  // would crash the process. The pool drops the client and the next query reports the failure.
  pool.on('error', () => {});
  const driver = new PostgresDriver(pool, connection);
  try {
    // Looked up first: PostgreSQL checks CREATE SCHEMA IF NOT EXISTS against the database's CREATE
    // right even when the schema exists, which a role with rights on its own schema alone lacks.
    if (schema && (await driver.query('SELECT 1 FROM pg_namespace WHERE nspname = ?', [schema])).length === 0) {
      // CREATE SCHEMA IF NOT EXISTS is not safe against itself: two instances starting together
      // can both decide to create it. The advisory lock lets one go first.
      await driver.transaction(async (tx) => {
        await tx.query("SELECT pg_advisory_xact_lock(hashtext('gateway-schema:' || ?::text))", [schema]);
        await tx.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      });
    } else if (!schema) {
      await driver.query('SELECT 1');
    }
  } catch (e) {
    await pool.end().catch(() => {});
    throw e;
  }
  return driver;
}

interface Prepared {
  name: string;
  text: string;
}

type Queryable = pg.Pool | pg.ClientBase;

class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  /** `?` -> `$n` rewrites, each under a stable name so every connection prepares it once. */
  private readonly statements = new Map<string, Prepared>();

  constructor(
    private readonly pool: pg.Pool,
    /** How a session's connection is made: the pool's settings without its statement timeout. */
    private readonly sessionConnection: pg.ClientConfig,
  ) {}

  query(sql: string, params?: readonly SqlValue[]): Promise<Row[]> {
    return this.rows(this.pool, sql, params);
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.count(this.pool, sql, params);
  }

  async exec(script: string): Promise<void> {
    try {
      await this.pool.query(script);
    } catch (e) {
      throw unavailable(e);
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    try {
      return await this.transactionOnce(fn);
    } catch (e) {
      throw unavailable(e);
    }
  }

  private async transactionOnce<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A checked-out client has no listener of the pool's: a connection the server ends mid-transaction
    // (terminated backend, restart, failover) would emit an 'error' nobody handles and end the process.
    // The query in progress fails on its own; the client is marked broken so the pool discards it.
    const onError = (e: Error) => (broken ??= e);
    client.on('error', onError);
    try {
      return await this.transactionOn(client, fn, onError);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  /** BEGIN, `fn`, COMMIT on `client`; `broken` hears of a connection that must not be used again. */
  private async transactionOn<T>(client: pg.ClientBase, fn: (tx: SqlExecutor) => Promise<T>, broken: (e: Error) => void): Promise<T> {
    const tx: SqlExecutor = {
      query: (sql, params) => this.rows(client, sql, params),
      run: (sql, params) => this.count(client, sql, params),
      exec: async (script) => void (await client.query(script)),
    };
    try {
      await client.query('BEGIN');
      const result = await fn(tx);
      await client.query('COMMIT');
      return result;
    } catch (e) {
      // A connection that failed (lost, or a statement past the query timeout: pg keeps waiting for
      // its answer, so a ROLLBACK would queue behind it and time out as well) is not rolled back
      // over: it is dropped, and the server rolls the transaction back when it goes.
      if (connectionFailure(e) instanceof StoreUnavailableError && !transientConflict(e)) broken(e as Error);
      // A connection that cannot roll back must not go back into the pool.
      else await client.query('ROLLBACK').catch(broken);
      throw e;
    }
  }

  async session<T>(fn: (s: SqlSession) => Promise<T>): Promise<T> {
    const client = new pg.Client(this.sessionConnection);
    // A lost connection fails the statement in progress; the event itself must not end the process.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (e) {
      await client.end().catch(() => {});
      throw unavailable(e);
    }
    try {
      return await fn({
        query: (sql, params) => this.rows(client, sql, params),
        run: (sql, params) => this.count(client, sql, params),
        exec: async (script) => {
          try {
            await client.query(script);
          } catch (e) {
            throw unavailable(e);
          }
        },
        transaction: async (body) => {
          try {
            return await this.transactionOn(client, body, () => {});
          } catch (e) {
            throw unavailable(e);
          }
        },
      });
    } finally {
      // Ends the server's session too, and with it any session-level lock taken on it.
      await client.end().catch(() => {});
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private prepared(sql: string): Prepared {
    let p = this.statements.get(sql);
    if (!p) {
      p = { name: `gw_${this.statements.size + 1}`, text: toDollarParams(sql) };
      this.statements.set(sql, p);
    }
    return p;
  }

  private async rows(on: Queryable, sql: string, params: readonly SqlValue[] = []): Promise<Row[]> {
    const p = this.prepared(sql);
    try {
      const res = await on.query<Row>({ name: p.name, text: p.text, values: storable(params) });
      return res.rows;
    } catch (e) {
      throw unavailable(e);
    }
  }

  private async count(on: Queryable, sql: string, params: readonly SqlValue[] = []): Promise<number> {
    const p = this.prepared(sql);
    try {
      const res = await on.query({ name: p.name, text: p.text, values: storable(params) });
      return res.rowCount ?? 0;
    } catch (e) {
      throw unavailable(e);
    }
  }
}

/**
 * PostgreSQL text cannot hold U+0000, which SQLite's can, and a client's text may carry it (a key
 * name, a note, an id in a path): the statement failed and the client got a 500. Each NUL is sent as
 * U+FFFD, the replacement character, instead: a lookup finds nothing (no name or id the gateway
 * makes has either), and a write keeps the rest of the text. JSON is stored as text with its NULs
 * escaped (`\u0000`), so it round-trips unchanged.
 */
function storable(params: readonly SqlValue[]): SqlValue[] {
  return params.map((v) => (typeof v === 'string' && v.includes('\u0000') ? v.replaceAll('\u0000', '\uFFFD') : v));
}

/** Socket-level codes of a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** SQLSTATEs of a server that ended or refused the session: admin/crash shutdown, cannot connect now, too many connections. */
const SESSION_ENDED = new Set(['57P01', '57P02', '57P03', '53300']);
/** What pg itself says when the socket closed under a query, or a client it gave out is dead. */
const LOST = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Query read timeout)/;

/**
 * SQLSTATEs of a statement the server refused or ended for the moment, on a sound connection: a
 * deadlock (two transactions each holding a row the other waits for), a serialization failure, a
 * server that is read-only (a standby during a failover: 25006), a database that takes no
 * connections now (55000), a statement ended by the server's statement_timeout (57014). Nothing of
 * the transaction was applied, and the same work may succeed when tried again.
 */
const TRANSIENT_CONFLICTS = new Set(['40P01', '40001', '25006', '55000', '57014']);

/** Whether `e` (or the error it wraps) is a transient conflict: the connection is sound and rolls back as usual. */
function transientConflict(e: unknown): boolean {
  const failure = e instanceof StoreUnavailableError ? e.cause : e;
  const code = failure instanceof Error ? (failure as { code?: unknown }).code : undefined;
  return typeof code === 'string' && TRANSIENT_CONFLICTS.has(code);
}

/** What a caller sees of a failure: connectionFailure's verdict, and a transient conflict as StoreUnavailableError too (503, retried by the charge queue). */
function unavailable(e: unknown): unknown {
  if (!(e instanceof StoreUnavailableError) && transientConflict(e)) return new StoreUnavailableError(e);
  return connectionFailure(e);
}

/**
 * A failure of the connection rather than of the statement becomes a StoreUnavailableError (a 503
 * for the client, a retry for queued charges); anything else (a constraint, a bad statement, the
 * store's own verdicts) is passed on as it is.
 */
function connectionFailure(e: unknown): unknown {
  if (e instanceof StoreUnavailableError || !(e instanceof Error)) return e;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || SESSION_ENDED.has(code) || code.startsWith('08'))) return new StoreUnavailableError(e);
  return LOST.test(e.message) ? new StoreUnavailableError(e) : e;
}
