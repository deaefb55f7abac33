import { closeSync, openSync, readSync } from 'node:fs';
import type { JsonObject } from './json.js';

/**
 * Files an upstream's options name whose contents are credentials (a service-account key file given
 * as `key_file`). Each is read once, the first time an upstream's options are asked about (the
 * catalog asks at start), and that one read is what both the credential code and the one redaction
 * (redact-config.ts) see: a key the upstream signs with is always a key the redaction hides. A file
 * changed later is not read again; the gateway keeps the contents it read until it restarts.
 */

/** Option names that name a credential file: `key_file`, `credentials_file`, `private_key_file`, `token_file` ... */
const CREDENTIAL_FILE_OPTION = /(?:key|secret|token|password|credentials?|service_account)_file$/i;

/** A credential file holds a key or two; anything larger is not one (and `/dev/zero` would never end). */
export const MAX_CREDENTIAL_FILE_BYTES = 1024 * 1024;

/** What one read of a credential file gave: its text, or why there is none. */
export type CredentialFile = { path: string; text: string } | { path: string; error: string };

const readOnce = new WeakMap<JsonObject, ReadonlyMap<string, CredentialFile>>();

/** Whether option `name` names a credential file. */
export function namesCredentialFile(name: string): boolean {
  return CREDENTIAL_FILE_OPTION.test(name);
}

/**
 * The credential files `options` name (top-level string options only, blank ones ignored), by option
 * name. Read on the first call for this options object; later calls give the same contents. Never
 * throws: a file that cannot be read is an entry with the error.
 */
export function credentialFiles(options: JsonObject): ReadonlyMap<string, CredentialFile> {
  let files = readOnce.get(options);
  if (!files) {
    const read = new Map<string, CredentialFile>();
    for (const [name, value] of Object.entries(options)) {
      if (!namesCredentialFile(name) || typeof value !== 'string' || value.trim() === '') continue;
      read.set(name, readCredentialFile(value.trim()));
    }
    readOnce.set(options, (files = read));
  }
  return files;
}

function readCredentialFile(path: string): CredentialFile {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    return { path, error: (e as Error).message };
  }
  try {
    // Read in pieces up to one byte past the limit: a device or a pipe has no size to ask for first.
    const buf = Buffer.alloc(MAX_CREDENTIAL_FILE_BYTES + 1);
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
    }
    if (n > MAX_CREDENTIAL_FILE_BYTES) return { path, error: `larger than ${MAX_CREDENTIAL_FILE_BYTES} bytes: not a credential file` };
    return { path, text: buf.toString('utf8', 0, n) };
  } catch (e) {
    return { path, error: (e as Error).message };
  } finally {
    closeSync(fd);
  }
}
