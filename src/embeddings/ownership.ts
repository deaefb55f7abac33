import { errors } from '../core/errors.js';
import { isObject, type JsonObject } from '../core/json.js';
import type { Upstream } from '../http/types.js';
import type { EmbeddingRequest, EmbeddingVendor } from './types.js';

/**
 * Cross-vendor-common names (spec 2.3 rule 3): never another vendor's, whatever a vendor declares.
 * Each adapter decides what they mean in its own protocol (or drops them).
 */
export const COMMON_EMBEDDING_PARAMS: ReadonlySet<string> = new Set([
  'model', 'input', 'dimensions', 'encoding_format', 'user', 'input_type', 'task_type', 'title',
]);

/** Native name -> the vendors that declare it (`ownedParams`), common names left out. */
export type ParamOwners = ReadonlyMap<string, readonly EmbeddingVendor[]>;

/** Built once from the registry (or the service's vendors), so a request only does map lookups. */
export function paramOwners(vendors: Iterable<EmbeddingVendor>): ParamOwners {
  const owners = new Map<string, EmbeddingVendor[]>();
  for (const v of vendors) {
    for (const name of v.ownedParams) {
      if (COMMON_EMBEDDING_PARAMS.has(name)) continue;
      const list = owners.get(name);
      if (list) list.push(v);
      else owners.set(name, [v]);
    }
  }
  return owners;
}

/**
 * Spec 2.3 rule 3 for embeddings: an `extra_body` key or unknown top-level field (both are in
 * `req.extra`, request.ts) that another vendor owns, and no vendor serving this model owns, is a
 * 400 naming it, before anything is held, sent or charged. Names nobody owns pass through, so a
 * vendor parameter released today works today.
 *
 * The model's vendors are those of all its candidate upstreams (usually one): the verdict must not
 * depend on which upstream the weighted order put first. A request without extra fields does one
 * empty `for...in` here; the candidates are looked at only for a name someone owns.
 */
export function checkOwnership(req: EmbeddingRequest, body: JsonObject, candidates: readonly Upstream[], owners: ParamOwners): void {
  if (candidates.length === 0) return;
  for (const name in req.extra) {
    const by = owners.get(name);
    if (by === undefined || by.some((v) => candidates.some((up) => up.vendor === v.id))) continue;
    throw errors.foreignParameter(fieldOf(body, name), by[0]!.label, req.model);
  }
}

/** Where the client wrote the name: the literal `extra_body` wins over a top-level field (request.ts). */
function fieldOf(body: JsonObject, name: string): string {
  const literal = body['extra_body'];
  return isObject(literal) && Object.hasOwn(literal, name) ? `extra_body.${name}` : name;
}
