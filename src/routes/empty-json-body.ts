import type { FastifyInstance } from 'fastify';
import { installJsonParser } from '../http/json-depth.js';

/**
 * The official SDKs send DELETE with `Content-Type: application/json` and an empty body; Fastify's
 * own parser refuses that. Inside `scope`, an empty JSON body is read as no body; anything else goes
 * through the gateway's JSON parser as everywhere (nesting refused before parsing, forbidden keys).
 */
export function acceptEmptyJsonBody(scope: FastifyInstance): void {
  installJsonParser(scope, { emptyIsNoBody: true });
}
