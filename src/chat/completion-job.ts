import { randomBytes } from 'node:crypto';
import { isObject } from '../core/json.js';
import { compileSecrets, removeSecrets, type Secrets } from '../core/redact-secrets.js';
import type { UpstreamVerdict } from '../http/types.js';
import { generatedText, readCompletion, renderCompletion } from './completion-body.js';
import { readUsage, type ChatUsage } from './usage.js';

/**
 * The whole pure part of a large chat answer, done in the answer worker (large-completions.ts): the
 * same steps as for a small answer on the main thread (completion-body.ts), handing back the bytes to
 * send and the few facts billing needs. The cost is only known once the main thread has billed, so
 * the answer is rendered with a placeholder in its place (a random string no upstream can foresee)
 * and the main thread writes the amount there.
 */

export interface CompletionJob {
  /** The upstream's answer, moved to the worker. */
  raw: Uint8Array;
  /** The upstream's own credentials, to remove from the answer (core/redact.ts `ownCredentials`). */
  credentials: readonly string[];
}

export type CompletionJobResult =
  | { verdict: UpstreamVerdict }
  | {
      /** The vendor's usage when it reported a believable one (usage.ts `readUsage`). */
      usage?: ChatUsage;
      /** Without it, the output tokens counted from the returned messages. */
      generated: number;
      /** The answer to send, with the placeholder at `cost` when the answer has a `usage` object. */
      body: Uint8Array;
      cost?: { at: number; length: number };
    };

export async function prepareCompletion(job: CompletionJob): Promise<CompletionJobResult> {
  const raw = Buffer.from(job.raw.buffer, job.raw.byteOffset, job.raw.byteLength);
  const read = readCompletion(raw);
  if ('verdict' in read) return read;
  const { json } = read;
  const usage = readUsage(json.usage);
  const generated = usage ? 0 : await generatedText(json);
  const placeholder = randomBytes(16).toString('hex');
  const secrets = secretsOf(job.credentials);
  const body = renderCompletion(raw, json, placeholder, (text) => removeSecrets(text, secrets));
  if (body.length > grownBound(raw.length)) return { verdict: grewTooMuch(raw.length, body.length) };
  if (!isObject(json.usage)) return { usage, generated, body };
  const quoted = Buffer.from(JSON.stringify(placeholder));
  const at = body.indexOf(quoted);
  if (at < 0 || body.indexOf(quoted, at + quoted.length) >= 0) throw new Error('the cost could not be placed in the answer');
  return { usage, generated, body, cost: { at, length: quoted.length } };
}

/**
 * How large a rendered answer may be against what the upstream sent. Rendering writes the parsed
 * answer again, which keeps its size but for numbers: `1e20` is written as its 21 digits, so an
 * answer made of such numbers would grow up to ~5x (60 MB to 264 MB), past the answer budget that
 * counted its 60 MB. Real answers do not grow (log probabilities like `-9.5e-6` by a few characters
 * each): twice the size and 64 KiB is far beyond them.
 */
export function grownBound(rawBytes: number): number {
  return 2 * rawBytes + 64 * 1024;
}

function grewTooMuch(rawBytes: number, bodyBytes: number): UpstreamVerdict {
  return { kind: 'retryable', status: 502, message: `the answer of ${rawBytes} bytes would be sent as ${bodyBytes} bytes once rendered (numbers written out in full)` };
}

/** Compiled once per list of credentials (an upstream's, which changes only when a minted token rotates). */
const compiled = new Map<string, Secrets>();
const MAX_COMPILED = 64;

function secretsOf(credentials: readonly string[]): Secrets {
  const key = JSON.stringify(credentials);
  let s = compiled.get(key);
  if (!s) {
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(key, (s = compileSecrets(credentials)));
  }
  return s;
}
