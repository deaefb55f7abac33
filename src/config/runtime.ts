import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigFile } from './schema.js';

/**
 * Reads a secret kept in the data dir, creating it (owner-only) on first use. A file holding fewer
 * than `minLength` characters (empty, or written by hand too short to resist guessing) is replaced.
 */
export function persistentSecret(dataDir: string, file: string, bytes = 32, minLength = 16): string {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, file);
  if (existsSync(path)) {
    const v = readFileSync(path, 'utf8').trim();
    if (v.length >= minLength) return v;
  }
  const v = randomBytes(bytes).toString('base64url');
  writeFileSync(path, `${v}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return v;
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

/** Fills in what the config left out: secrets generated once and kept in the data dir. */
export function resolveSecrets(cfg: ConfigFile): RuntimeSecrets {
  const configured = cfg.secret === undefined ? [] : Array.isArray(cfg.secret) ? cfg.secret : [cfg.secret];
  const idSecrets = configured.length > 0 ? configured : [persistentSecret(cfg.data_dir, 'secret')];
  for (const s of idSecrets) if (s.length < 16) throw new Error('secret: each secret must be at least 16 characters');
  const adminToken = cfg.admin_token ?? persistentSecret(cfg.data_dir, 'admin-token', 32, ADMIN_TOKEN_MIN_LENGTH);
  return { idSecrets, adminToken, adminTokenGenerated: cfg.admin_token === undefined };
}
