import { errors } from '../core/errors.js';
import { findForbiddenKey, type JsonObject } from '../core/json.js';
import type { VideoVendor } from './types.js';

/**
 * Cross-vendor-common names (spec 2.3 rule 3): accepted for every model whatever vendor serves it.
 * Each adapter decides where they go in its own protocol.
 */
export const COMMON_PARAMS: ReadonlySet<string> = new Set([
  'duration', 'seed', 'size', 'resolution', 'negative_prompt', 'aspect_ratio', 'ratio', 'fps', 'n', 'user',
]);

/** Rejects prototype-reaching keys anywhere in the body (400 with the path as `param`). */
export function rejectForbiddenKeys(body: unknown): void {
  const hit = findForbiddenKey(body);
  if (hit) throw errors.invalidRequest(`The key '${hit.split(/[.[]/).pop()}' is not allowed in a request body.`, hit, 'forbidden_key');
}

/**
 * Ownership check: a native field owned by another vendor, and not by this model's vendor, is a
 * 400 naming it. Names nobody owns pass through, so a vendor parameter released today works today.
 */
export function checkOwnership(native: JsonObject, vendor: VideoVendor, model: string, all: Iterable<VideoVendor>): void {
  for (const name of Object.keys(native)) {
    if (COMMON_PARAMS.has(name) || vendor.ownedParams.has(name)) continue;
    for (const other of all) {
      if (other.id !== vendor.id && other.ownedParams.has(name)) throw errors.foreignParameter(name, other.label, model);
    }
  }
}
