import { readFileSync, statSync } from 'node:fs';
import { extname } from 'node:path';
import { CliError, EXIT } from '../exit.js';

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);
/** The gateway's own limit on an inline image is larger; this keeps a typo (a video file, say) from being read whole. */
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const IMAGE_TYPES: Record<string, string> = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.webp': 'image/webp', '.gif': 'image/gif' };

/**
 * `--param k=v` into the request body: the value is JSON when it parses as JSON (numbers, booleans,
 * objects), a string otherwise; dotted keys nest (`parameters.sampleCount=2`).
 */
export function applyParam(body: Record<string, unknown>, pair: string): Record<string, unknown> {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new CliError(`--param '${pair}' is not key=value`, EXIT.usage);
  const path = pair.slice(0, eq).split('.');
  if (path.some((p) => p === '' || FORBIDDEN.has(p))) throw new CliError(`--param '${pair}' has an unusable key`, EXIT.usage);
  const raw = pair.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // Plain text, e.g. --param negative_prompt=blurry
  }
  let at = body;
  for (const p of path.slice(0, -1)) {
    const next = at[p];
    if (next === undefined) at = at[p] = {};
    else if (next !== null && typeof next === 'object' && !Array.isArray(next)) at = next as Record<string, unknown>;
    else throw new CliError(`--param '${pair}': '${p}' is already a value, not an object`, EXIT.usage);
  }
  at[path[path.length - 1]!] = value;
  return body;
}

/** --image: a URL is passed as is; a local file becomes a data: URL the gateway decodes. */
export function imageUrl(arg: string): string {
  if (/^(https?|data):/i.test(arg)) return arg;
  let size: number;
  try {
    size = statSync(arg).size;
  } catch {
    throw new CliError(`--image '${arg}' is neither an http(s) URL nor a readable file`, EXIT.usage);
  }
  if (size > MAX_IMAGE_BYTES) throw new CliError(`--image '${arg}' is larger than ${MAX_IMAGE_BYTES} bytes`, EXIT.usage);
  const type = IMAGE_TYPES[extname(arg).toLowerCase()];
  if (!type) throw new CliError(`--image '${arg}': use a .png, .jpg, .webp or .gif file`, EXIT.usage);
  return `data:${type};base64,${readFileSync(arg).toString('base64')}`;
}

export function positiveNumber(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new CliError(`${name} must be a positive number, not '${v}'`, EXIT.usage);
    return n;
  };
}

/** A count of whole units (bytes, items): a positive safe integer. */
export function positiveInteger(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n <= 0) throw new CliError(`${name} must be a positive whole number, not '${v}'`, EXIT.usage);
    return n;
  };
}
