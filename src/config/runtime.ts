import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { ConfigFile } from './schema.js';

/** What to do with a secret file that holds no usable secret (empty, too short, or not text). */
type Unusable = 'replace' | 'refuse';

/**
 * Reads a secret kept in the data dir, creating it (owner-only) on first use. The file is written
 * whole or not at all (a temporary file, synced, then linked into place), so a crash or a power
 * loss cannot leave it half written. A file holding no usable secret (fewer than `minLength`
 * characters, or control characters: what a write cut short leaves) is replaced when `unusable`
 * says so, and otherwise refused with an error naming it: the id secret must never be replaced, as
 * every id and link sealed under it would stop opening while their jobs still bill.
 */
export function persistentSecret(dataDir: string, file: string, opts: { bytes?: number; minLength?: number; unusable: Unusable }): string {
  const { bytes = 32, minLength = ID_SECRET_MIN_LENGTH } = opts;
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, file);
  const existing = readIfPresent(path);
  if (existing !== undefined) {
    const v = existing.trim();
    const problem = secretProblem(v, minLength);
    if (!problem) return v;
    if (opts.unusable === 'refuse')
      throw new Error(
        `${path} ${problem}: no usable secret. The file was perhaps cut short by a crash: restore it from a backup ` +
          '(removing it makes a new secret, and every id and link issued under the old one then stops working)',
      );
  }
  const v = randomBytes(bytes).toString('base64url');
  if (writeWhole(path, `${v}\n`, existing !== undefined)) return v;
  // Another process sharing the data dir made the file first: its secret is the one.
  return persistentSecret(dataDir, file, opts);
}

function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Why `v` is no secret, or undefined when it is one. */
function secretProblem(v: string, minLength: number): string | undefined {
  if (v.length === 0) return 'is empty';
  // Zeros (a power loss can leave blocks of them), other control characters, bytes that are not UTF-8.
  if (/[\u0000-\u001f\u007f\ufffd]/.test(v)) return 'holds control characters or bytes that are not text';
  if (v.length < minLength) return `holds ${v.length} characters (fewer than ${minLength})`;
  return undefined;
}

/**
 * Writes `text` to a temporary file beside `path`, syncs it, and moves it into place: linked, so
 * that a file another process made meanwhile is kept (returns false then), or renamed over the
 * file when `replace`. The directory is synced too, so the new name survives a power loss.
 */
function writeWhole(path: string, text: string, replace: boolean): boolean {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (replace) renameSync(tmp, path);
    else if (!linkNew(tmp, path)) return false;
  } finally {
    rmSync(tmp, { force: true });
  }
  syncDir(dir);
  return true;
}

/** Links `tmp` to `path` unless `path` exists (false then); renames where hard links are not supported. */
function linkNew(tmp: string, path: string): boolean {
  try {
    linkSync(tmp, path);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw e;
    renameSync(tmp, path);
    return true;
  }
}

function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Not every platform opens or syncs a directory (Windows); the file itself is synced.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export interface RuntimeSecrets {
  /** Id-sealing secrets, oldest first; the last seals new ids. */
  idSecrets: string[];
  adminToken: string;
  /** True when the admin token was generated into the data dir (so the operator is told where). */
  adminTokenGenerated: boolean;
}

/** The shortest admin token accepted, from the config or the data dir's file (config/schema.ts says why). */
export const ADMIN_TOKEN_MIN_LENGTH = 24;

/** The shortest id-sealing secret accepted, configured (config/schema.ts) or read from the data dir. */
export const ID_SECRET_MIN_LENGTH = 16;

/** Fills in what the config left out: secrets generated once and kept in the data dir. */
export function resolveSecrets(cfg: ConfigFile): RuntimeSecrets {
  const configured = cfg.secret === undefined ? [] : Array.isArray(cfg.secret) ? cfg.secret : [cfg.secret];
  const idSecrets = configured.length > 0 ? configured : [persistentSecret(cfg.data_dir, 'secret', { unusable: 'refuse' })];
  // The schema refuses a short configured one already (so `gateway check` does too); kept for configs built in code.
  for (const s of idSecrets) if (s.length < ID_SECRET_MIN_LENGTH) throw new Error(`secret: each secret must be at least ${ID_SECRET_MIN_LENGTH} characters`);
  // A token too short to resist guessing is replaced: nothing made under it depends on it, and the
  // operator reads the new one from the same file.
  const adminToken = cfg.admin_token ?? persistentSecret(cfg.data_dir, 'admin-token', { minLength: ADMIN_TOKEN_MIN_LENGTH, unusable: 'replace' });
  return { idSecrets, adminToken, adminTokenGenerated: cfg.admin_token === undefined };
}
