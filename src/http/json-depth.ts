import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';

/** Deeper than any API here needs; a body nested deeper is refused before any code walks it. */
export const MAX_JSON_DEPTH = 64;

const tooDeepError = (max: number) => errors.invalidRequest(`The body is nested deeper than ${max} levels.`, undefined, 'too_deep');

/**
 * Refuses bodies nested deeper than `max`, twice over:
 * - JSON text is scanned before it is parsed. Parsing a hostile nesting is itself the cost: 5 MB of
 *   `[` and 5 MB of `]` (under the body limit) held the event loop ~1.7 s in `JSON.parse`, on any POST
 *   path, before any key was asked for. The scan is one pass over the text and allocates nothing.
 * - Every parsed body (from any parser) is walked before validation, iteratively.
 */
export function installJsonDepthLimit(app: FastifyInstance, max = MAX_JSON_DEPTH): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (jsonNestsDeeper(text, max)) return done(tooDeepError(max), undefined);
    parseJson(req, text, done);
  });
  app.addHook('preValidation', (req, _reply, done) => {
    if (req.body !== undefined && tooDeep(req.body, max)) return done(tooDeepError(max));
    done();
  });
}

/** Whether JSON text opens more than `max` arrays or objects inside one another (strings skipped). */
export function jsonNestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

/** Iterative depth check (a recursive one could itself overflow the stack on hostile input). */
function tooDeep(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
