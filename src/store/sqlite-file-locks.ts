import { Mutex } from './mutex.js';

/**
 * One mutex per database file for the whole process: two connections to the same file in one
 * process would otherwise block each other inside SQLite's busy handler, which runs on the
 * very thread the other connection needs in order to finish.
 */
const fileLocks = new Map<string, { mutex: Mutex; users: number }>();

/** The statement lock of the file `key` (its real path); an in-memory database (no key) has its own. */
export function acquireFileLock(key: string | undefined): Mutex {
  if (key === undefined) return new Mutex();
  let entry = fileLocks.get(key);
  if (!entry) {
    entry = { mutex: new Mutex(), users: 0 };
    fileLocks.set(key, entry);
  }
  entry.users++;
  return entry.mutex;
}

export function releaseFileLock(key: string | undefined): void {
  if (key === undefined) return;
  const entry = fileLocks.get(key);
  if (entry && --entry.users <= 0) fileLocks.delete(key);
}
