// What the SQLite checkpoint passes (sqlite-checkpointer.ts) are given, their defaults, and what they tell.
import { fdatasync } from 'node:fs';
import { promisify } from 'node:util';

/** Takes the store's statement lock; resolves with its release once no statement of this process runs. */
export type HoldStatements = () => Promise<() => void>;

export interface CheckpointOptions {
  /** How often a checkpoint pass runs while there are writes (ms). */
  everyMs?: number;
  /** How long the WAL must stay unchanged, all of it checkpointed, before the passes stop (ms). */
  idleMs?: number;
  /** The WAL size (frames) past which a pass holds the statements so the WAL can start over. */
  restartFrames?: number;
  /** Keeps this process's statements out while such a pass runs (none given: nothing is held). */
  hold?: HoldStatements;
  /** The longest the statements are held for one pass (ms). */
  holdLimitMs?: number;
  /** Makes a file's written data durable (tests inject faults and delays here). */
  sync?: (fd: number) => Promise<void>;
  /**
   * Called once if the database file's sync fails after a copy; the passes stop then, the pin stays
   * (see `syncFailed`). The default ends the process at once (`process.abort()`), without closing
   * the database, so that the WAL, which still holds every copied page durably, is replayed by the
   * next start.
   */
  onSyncFailure?: (e: Error) => void;
}

/** The default `sync`: fdatasync on libuv's threadpool. */
export const syncFile = promisify(fdatasync);

/** The default `onSyncFailure`. */
export function abortOnSyncFailure(e: Error): void {
  process.stderr.write(`fatal: the SQLite database file could not be synced after a checkpoint (${e.message}); stopping at once so that the next start replays the write-ahead log\n`);
  process.abort();
}

/**
 * Each completed pass, for diagnostics (the benchmark's stall probe): whether it held the store's
 * statements, when it and its copying started (ms since `performance.timeOrigin`), its whole length
 * and the part spent copying on the event loop.
 */
export interface CheckpointPassEvent {
  held: boolean;
  startedAt: number;
  ms: number;
  copyStartedAt: number;
  copyMs: number;
}
