import { createHash, randomBytes } from 'node:crypto';

/** Recognisable prefix so leaked keys can be spotted by secret scanners. */
export const KEY_PREFIX = 'sk-gw-';
/** base64url of 32 random bytes is 43 characters. */
const KEY_RE = /^sk-gw-[A-Za-z0-9_-]{43}$/;

export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function isWellFormedKey(key: string): boolean {
  return KEY_RE.test(key);
}

/** What may be shown of a key after creation. */
export function displayPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 6);
}
