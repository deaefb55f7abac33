import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';

/**
 * The official SDKs send DELETE with `Content-Type: application/json` and an empty body; Fastify's
 * own parser refuses that. Inside `scope`, an empty JSON body is read as no body; anything else must
 * still be valid JSON.
 */
export function acceptEmptyJsonBody(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
    if (String(text).trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(String(text)));
    } catch {
      done(errors.invalidJson('The request body is not valid JSON.'), undefined);
    }
  });
}
