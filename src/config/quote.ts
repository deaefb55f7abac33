import type { ZodIssue } from 'zod';
import { redact } from '../core/redact.js';

/** The longest value a config error quotes (an enum word, a vendor or model name, an address). */
export const QUOTED_MAX = 20;

/**
 * How a config error names a value the file gave. The value may be a secret in the wrong place (a
 * `${OPENAI_API_KEY}` under an enum key or as the vendor), and the error goes to a terminal, a CI
 * log, a support ticket. So only a short value written in the file itself, shaped like no
 * credential, is quoted; any other is described by its length alone.
 */
export function quoteValue(value: unknown, fromEnv: boolean, max = QUOTED_MAX): string {
  if (fromEnv) return typeof value === 'string' ? `a ${value.length}-character value from the environment (not shown)` : 'a value from the environment (not shown)';
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (typeof value !== 'string') return `a value of type ${Array.isArray(value) ? 'array' : typeof value}`;
  if (value.length <= max && !/[\u0000-\u001f\u007f]/.test(value) && redact(value) === value) return `'${value}'`;
  return `a ${value.length}-character value (not shown: it may be a secret)`;
}

/**
 * An issue's message with the value it received quoted as quoteValue says. zod writes the received
 * value into one message of its own (a value outside an enum); every other names types and limits.
 */
export function issueMessage(issue: ZodIssue, fromEnv: boolean): string {
  if (issue.code === 'invalid_enum_value') {
    const said = `received '${String(issue.received)}'`;
    if (issue.message.includes(said)) return issue.message.replace(said, () => `received ${quoteValue(issue.received, fromEnv)}`);
  }
  return issue.message;
}
