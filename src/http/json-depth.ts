import type { FastifyInstance } from 'fastify';
import { errors, type GatewayError } from '../core/errors.js';
import { findForbiddenKey } from '../core/json.js';
import { escapeMarkerLookalikes } from '../core/lossless-json.js';

/** Deeper than any API here needs; a body nested deeper is refused before it is parsed. */
export const MAX_JSON_DEPTH = 64;

/**
 * More top-level fields than any API here takes (a video create, the widest, has about 60 names:
 * standard, common and the largest vendor's own); a body with more is refused before it is parsed.
 * Every field a route reads or passes on is some work per field; a 5.9 MB body of 500k fields,
 * under the body limit, cost ~0.3 s in `JSON.parse` alone and seconds across a create.
 */
export const MAX_TOP_LEVEL_FIELDS = 256;

/**
 * More members, at every depth together, than any body here needs (a chat request with a hundred
 * tools and their JSON schemas holds a few thousand). A wide object one level down costs what a wide
 * top level does: 500k members under a video create's `parameters` held the event loop ~1 s across
 * parsing, the forbidden-key walk, the merge and the vendor's encoding. Each object and each array
 * counts one, each object field one more; the elements of an array of numbers or strings
 * (embeddings inputs, token ids) are not counted.
 */
export const MAX_OBJECT_MEMBERS = 20_000;

/** Per depth, whether the value open there is an object (1) or an array (0); the scan is synchronous, so one buffer serves every call. */
const openKinds = new Uint8Array(MAX_JSON_DEPTH + 2);

/**
 * The gateway's JSON body parser, for the app and for any scope that needs its own: the text is
 * scanned for nesting before it is parsed, then parsed by Fastify's default parser (which refuses
 * `__proto__` and `constructor.prototype` keys).
 *
 * Why before: parsing a hostile nesting is itself the cost. 5 MB of `[` and 5 MB of `]` (under the
 * body limit) held the event loop ~1.7 s in `JSON.parse`, on any POST path, before any key was asked
 * for. The same scan counts the top-level object's fields, and stops at the first one too many. It
 * is one pass over the text and allocates nothing. Every parser that yields objects is this one, so
 * parsed bodies need no walk of their own afterwards. A string that could be taken for one of the
 * gateway's number markers is escaped here (core/lossless-json.ts), for the same reason.
 *
 * `emptyIsNoBody`: an empty body is read as no body (the official SDKs send DELETE with
 * `Content-Type: application/json` and nothing after it), instead of Fastify's refusal.
 */
export function installJsonParser(scope: FastifyInstance, opts: { emptyIsNoBody?: boolean; max?: number; maxFields?: number } = {}): void {
  const max = opts.max ?? MAX_JSON_DEPTH;
  const maxFields = opts.maxFields ?? MAX_TOP_LEVEL_FIELDS;
  const parseJson = scope.getDefaultJsonParser('error', 'error');
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    // parseAs 'string' hands over a string.
    const text = body as string;
    if (opts.emptyIsNoBody && text.trim() === '') return done(null, undefined);
    const problem = scanJson(text, max, maxFields);
    if (problem === 'too_deep') return done(errors.invalidRequest(`The body is nested deeper than ${max} levels.`, undefined, 'too_deep'), undefined);
    if (problem === 'too_many_fields')
      return done(errors.invalidRequest(`The body has more than ${maxFields} top-level fields.`, undefined, 'too_many_fields'), undefined);
    if (problem === 'too_many_members')
      return done(errors.invalidRequest(`The body has more than ${MAX_OBJECT_MEMBERS} members (objects, arrays and object fields) in all.`, undefined, 'too_many_fields'), undefined);
    // A string beginning with U+E000 is kept apart from the gateway's markers (core/lossless-json.ts).
    parseJson(req, escapeMarkerLookalikes(text), (err, value) => (err ? done(whyUnparsed(text), undefined) : done(null, value)));
  });
}

/** Whether JSON text opens more than `max` arrays or objects inside one another (strings skipped). */
export function jsonNestsDeeper(text: string, max: number): boolean {
  return scanJson(text, max, Infinity, Infinity) === 'too_deep';
}

/**
 * Fastify's parser reports a forbidden key and broken JSON alike (its error drops the cause). A
 * second, plain parse tells them apart: `JSON.parse` defines `__proto__` as an ordinary own key, so
 * it is safe to run on the text, and this runs only for a body already refused.
 */
function whyUnparsed(text: string): GatewayError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return errors.invalidJson('The request body is not valid JSON.');
  }
  // The key's path, as for one found deeper after parsing (video/passthrough.ts).
  return errors.invalidRequest('The body contains a forbidden key (__proto__ or constructor.prototype).', findForbiddenKey(parsed), 'forbidden_key');
}

/**
 * The first limit JSON text breaks, in text order: more than `maxDepth` arrays or objects inside one
 * another, a top-level object of more than `maxFields` fields (counted by the commas between
 * them, so malformed text is counted too; the parser refuses it if it gets that far), or more than
 * `maxMembers` members at every depth together (each object or array counts one, each comma inside
 * an object one more; the elements of an array of numbers or strings are not counted).
 * A string's body is jumped over with `indexOf` (an upstream answer can carry a video as one
 * base64 string of tens of MB): a quote ends it unless an odd run of backslashes stands before it.
 * Counting a run looks back only as far as the previous quote found, so the whole scan stays linear.
 */
export function scanJson(text: string, maxDepth: number, maxFields: number, maxMembers = MAX_OBJECT_MEMBERS): JsonScanProblem | undefined {
  return scanJsonWithin(text, maxDepth, maxFields, { left: maxMembers });
}

/** What is left of a member budget that several JSON texts draw on together (the fields of one form). */
export interface MemberBudget {
  left: number;
}

/**
 * `scanJson` counting the members against `budget`, which it leaves with what the text did not use
 * (a form's fields that hold JSON are, together, one body's worth: 64 fields of 20,000 members each
 * would be 64 times what a JSON body may hold).
 */
export function scanJsonWithin(text: string, maxDepth: number, maxFields: number, budget: MemberBudget): JsonScanProblem | undefined {
  let depth = 0;
  let fields = 1;
  const kinds = maxDepth < openKinds.length ? openKinds : new Uint8Array(maxDepth + 2);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = stringEnd(text, i);
      if (i < 0) return undefined; // unterminated: the parser will refuse it
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > maxDepth) return 'too_deep';
      kinds[depth] = c === 0x7b ? 1 : 0;
      // An array counts too: millions of `[]` cost the parser as much as as many objects.
      if (--budget.left < 0) return 'too_many_members';
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth > 0) depth--;
    } else if (c === 0x2c /* , */ && depth > 0 && kinds[depth] === 1) {
      if (depth === 1 && ++fields > maxFields) return 'too_many_fields';
      if (--budget.left < 0) return 'too_many_members';
    }
  }
  return undefined;
}

export type JsonScanProblem = 'too_deep' | 'too_many_fields' | 'too_many_members';

/** The index of the quote that closes the string opening at `open`, or -1 when none does. */
function stringEnd(text: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return -1;
    let slashes = 0;
    for (let j = q - 1; j > open && text.charCodeAt(j) === 0x5c /* \ */; j--) slashes++;
    if (slashes % 2 === 0) return q;
    from = q + 1;
  }
}
