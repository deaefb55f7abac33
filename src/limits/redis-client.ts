import { Redis } from 'ioredis';
import type { RedisLimiterOptions, ScriptClient } from './redis-options.js';
import { RAISE_LUA, RECORD_LUA } from './redis-handover-lua.js';
import { EPOCH_LUA, HEARTBEAT_LUA, RELEASE_LUA, TURN_LUA } from './redis-scripts.js';

/**
 * The Redis limiter's connection: the client given, or one built from the url that fails fast (a
 * request must never wait on a Redis that is not there), with the limiter's scripts defined on it.
 */
export function scriptClient(opts: RedisLimiterOptions): ScriptClient {
  const client =
    opts.client ??
    new Redis(opts.url ?? 'redis://127.0.0.1:6379', {
      // Fail fast instead of queueing: a request must never wait on a Redis that is not there.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 500,
      connectTimeout: 1_000,
      retryStrategy: (times) => Math.min(100 * times, 2_000),
    });
  client.defineCommand('rlTurn', { lua: TURN_LUA });
  client.defineCommand('rlRelease', { lua: RELEASE_LUA });
  client.defineCommand('rlRecord', { lua: RECORD_LUA });
  client.defineCommand('rlRaise', { lua: RAISE_LUA });
  client.defineCommand('rlHeartbeat', { lua: HEARTBEAT_LUA });
  client.defineCommand('rlEpoch', { lua: EPOCH_LUA });
  return client as ScriptClient;
}

/**
 * Settles when the client's first connection attempt is over (ready, failed or ended), or after
 * `ms`, whichever comes first.
 */
export function firstAttempt(client: ScriptClient, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off('ready', done);
      client.off('error', done);
      client.off('end', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    client.once('ready', done);
    client.once('error', done);
    client.once('end', done);
  });
}
