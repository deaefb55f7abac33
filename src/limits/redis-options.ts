import type { Redis } from 'ioredis';

/** The Redis limiter's options and the shapes it shares with its tests. */
export interface LimiterLogger {
  warn(msg: string): void;
  info(msg: string): void;
}

export interface RedisLimiterOptions {
  /** redis://[:password@]host:port[/db]; ignored when `client` is given. */
  url?: string;
  /** A client to use instead of one built from `url` (it is then not closed by `close()`). */
  client?: Redis;
  /** Prepended to every key, so several deployments or test runs can share one Redis. */
  keyPrefix?: string;
  /** Window clock in ms; by default the Redis server's clock, so all instances share one notion of time. */
  now?: () => number;
  /** How long the first admissions after start wait for the initial connection (default 1 s). */
  connectWaitMs?: number;
  /** A command slower than this counts as Redis failing. */
  commandTimeoutMs?: number;
  /** After a failure, how long requests go straight to the local limiter before Redis is tried again. */
  coolDownMs?: number;
  /** How often this instance tells Redis it is live (the count sets each one's share in an outage). */
  heartbeatMs?: number;
  /** How long a token correction may wait to ride in its family's next admission call (default 10 ms). */
  correctionWaitMs?: number;
  logger?: LimiterLogger;
}

/** The client with the limiter's scripts defined on it (ioredis `defineCommand`). */
export type ScriptClient = Redis & {
  rlTurn(...args: (string | number)[]): Promise<number[][]>;
  rlRelease(...args: (string | number)[]): Promise<number[]>;
  rlRecord(...args: (string | number)[]): Promise<number>;
  rlRaise(...args: (string | number)[]): Promise<number>;
  rlHeartbeat(...args: (string | number)[]): Promise<number>;
  rlEpoch(...args: (string | number)[]): Promise<string>;
};

export const consoleLogger: LimiterLogger = {
  warn: (m) => console.warn(m),
  info: (m) => console.info(m),
};
