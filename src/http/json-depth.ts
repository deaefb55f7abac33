import type { FastifyInstance } from 'fastify';
import { errors, type GatewayError } from '../core/errors.js';

/** Deeper than any API here needs; a body nested deeper is refused before it is parsed. */
export const MAX_JSON_DEPTH = 64;

/**
 * The gateway's JSON body parser, for the app and for any scope that needs its own: the text is
 * scanned for nesting before it is parsed, then parsed by Fastify's default parser (which refuses
 * `__proto__` and `constructor.prototype` keys).
 *
 * Why before: parsing a hostile nesting is itself the cost. 5 MB of `[` and 5 MB of `]` (under the
 * body limit) held the event loop ~1.7 s in `JSON.parse`, on any POST path, before any key was asked
 * for. The scan is one pass over the text and allocates nothing. Every parser that yields objects
 * is this one, so parsed bodies need no walk of their own afterwards.
 *
 * `emptyIsNoBody`: an empty body is read as no body (the official SDKs send DELETE with
 * `Content-Type: application/json` and nothing after it), instead of Fastify's refusal.
 */
export function installJsonParser(scope: FastifyInstance, opts: { emptyIsNoBody?: boolean; max?: number } = {}): void {
  const max = opts.max ?? MAX_JSON_DEPTH;
  const parseJson = scope.getDefaultJsonParser('error', 'error');
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    // parseAs 'string' hands over a string.
    const text = body as string;
    if (opts.emptyIsNoBody && text.trim() === '') return done(null, undefined);
    if (jsonNestsDeeper(text, max)) return done(errors.invalidRequest(`The body is nested deeper than ${max} levels.`, undefined, 'too_deep'), undefined);
    parseJson(req, text, (err, value) => (err ? done(whyUnparsed(text), undefined) : done(null, value)));
  });
}

/**
 * Fastify's parser reports a forbidden key and broken JSON alike (its error drops the cause). A
 * second, plain parse tells them apart: `JSON.parse` defines `__proto__` as an ordinary own key, so
 * it is safe to run on the text, and this runs only for a body already refused.
 */
function whyUnparsed(text: string): GatewayError {
  try {
    JSON.parse(text);
  } catch {
    return errors.invalidJson('The request body is not valid JSON.');
  }
  return errors.invalidRequest('The body contains a forbidden key (__proto__ or constructor.prototype).', undefined, 'forbidden_key');
}

/**
 * Whether JSON text opens more than `max` arrays or objects inside one another (strings skipped).
 * A string's body is jumped over with `indexOf` (an upstream answer can carry a video as one
 * base64 string of tens of MB): a quote ends it unless an odd run of backslashes stands before it.
 * Counting a run looks back only as far as the previous quote found, so the whole scan stays linear.
 */
export function jsonNestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = stringEnd(text, i);
      if (i < 0) return false; // unterminated: the parser will refuse it
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

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
