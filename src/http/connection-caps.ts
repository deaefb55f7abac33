import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { addressBucket } from '../console/sign-in-limit.js';

/** Where refusals are said: a warning per address (or for the total) at most once a minute. */
interface RefusalLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface ConnectionCaps {
  /** Open client connections, all addresses together (node's server.maxConnections). */
  total: number;
  /** Open client connections from one address (an IPv6 one by its /64). */
  perAddress: number;
}

const LOG_EVERY_MS = 60_000;
/** Addresses remembered for the once-a-minute warning; past it the memory starts afresh. */
const MAX_LOGGED_ADDRESSES = 10_000;
/** The default total, when the descriptor limit leaves room for it. */
const DEFAULT_MAX_CONNECTIONS = 10_000;

/**
 * The default for server.max_connections: 10,000, or three quarters of the process's open-file limit
 * when that is lower. Every client connection takes a descriptor, and so do the database, upstream
 * connections, log output and the files being served: a gateway whose clients took all of them
 * could no longer open its database (SQLite's checkpoint failed) nor accept a client at all.
 */
export function defaultMaxConnections(openFileLimit = softOpenFileLimit()): number {
  if (openFileLimit === undefined) return DEFAULT_MAX_CONNECTIONS;
  return Math.max(64, Math.min(DEFAULT_MAX_CONNECTIONS, Math.floor((openFileLimit * 3) / 4)));
}

/** The soft RLIMIT_NOFILE, read where Linux shows it; undefined elsewhere or when unlimited. */
function softOpenFileLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'latin1'));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Caps the client connections held open at once, so that no client (nor all of them) can take every
 * descriptor the process has. Over the total, node closes the new connection itself ('drop'); over
 * the per-address cap it is destroyed here at once, before a byte of it is read. The address is the
 * socket's own peer, never an X-Forwarded-For entry: those are read per request, and a client could
 * write any. Behind a reverse proxy every connection comes from the proxy: raise the per-address cap
 * to the proxy's pool. Each refusal is counted; `onRefused` gets the reason (for the metric).
 */
export function capConnections(server: Server, caps: ConnectionCaps, log: RefusalLog, onRefused: (reason: 'total' | 'per_address') => void, now = Date.now): void {
  server.maxConnections = caps.total;
  const open = new Map<string, number>();
  const loggedAt = new Map<string, number>();
  const warnOnce = (key: string, fields: Record<string, unknown>, message: string) => {
    const t = now();
    const last = loggedAt.get(key);
    if (last !== undefined && t - last < LOG_EVERY_MS) return;
    if (loggedAt.size >= MAX_LOGGED_ADDRESSES) loggedAt.clear();
    loggedAt.set(key, t);
    log.warn(fields, message);
  };
  server.on('drop', (data?: { remoteAddress?: string }) => {
    onRefused('total');
    warnOnce('(total)', { limit: caps.total, remote_address: data?.remoteAddress }, 'connection refused: server.max_connections reached (logged at most once a minute)');
  });
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    // Already gone (reset before it was handed over): nothing to count.
    if (address === undefined) return;
    const bucket = addressBucket(address);
    const held = open.get(bucket) ?? 0;
    if (held >= caps.perAddress) {
      socket.destroy();
      onRefused('per_address');
      warnOnce(bucket, { limit: caps.perAddress, remote_address: bucket }, 'connection refused: server.max_connections_per_address reached for this address (logged at most once a minute per address)');
      return;
    }
    open.set(bucket, held + 1);
    socket.once('close', () => {
      const left = (open.get(bucket) ?? 1) - 1;
      if (left <= 0) open.delete(bucket);
      else open.set(bucket, left);
    });
  });
}
