import { isObject, type Json, type JsonObject } from '../core/json.js';
import type { EmbeddingRequest, EmbeddingVendor } from './types.js';

/** The vector size one upstream is asked for, and where the client wrote it. */
export interface RequestedDimensions {
  size: number;
  /** The path in `req.extra` the size comes from (it wins over the top-level `dimensions` in the vendor's body); absent for the top-level field. */
  from?: readonly string[];
}

/**
 * The size that goes upstream to `vendor` for this request: the top-level `dimensions`, unless the
 * extra fields (`extra_body`, unknown top-level fields) set the vendor's own size field, which then
 * wins in its body (`vendor.dimensionsPath` knows how its adapter merges them). Every vector of the
 * answer is held to it (run.ts); undefined when nothing asks a size, or when what wins is no positive
 * integer (the vendor judges that: the gateway has no size to hold the answer to).
 */
export function requestedDimensions(vendor: EmbeddingVendor | undefined, req: EmbeddingRequest, upstreamModel: string): RequestedDimensions | undefined {
  // A request without extra fields takes no path lookup (an empty `for...in`).
  for (const _ in req.extra) {
    const from = vendor?.dimensionsPath?.(req.extra, upstreamModel);
    if (from === undefined) break;
    const size = valueAt(req.extra, from);
    return isSize(size) ? { size, from } : undefined;
  }
  return req.dimensions === undefined ? undefined : { size: req.dimensions };
}

/** Whether the request can ask any upstream a size: it has `dimensions` or extra fields (most have neither, and skip every lookup). */
export function mayAskSize(req: EmbeddingRequest): boolean {
  if (req.dimensions !== undefined) return true;
  for (const _ in req.extra) return true;
  return false;
}

/**
 * The request field that names `asked`, as the client wrote it: `dimensions`, or the extra field's
 * path, under `extra_body.` when the literal `extra_body` holds it (it wins over a top-level field
 * of the same name, request.ts).
 */
export function dimensionsParam(asked: RequestedDimensions, body: JsonObject): string {
  if (!asked.from) return 'dimensions';
  const path = asked.from.join('.');
  const literal = body['extra_body'];
  return isObject(literal) && Object.hasOwn(literal, asked.from[0]!) ? `extra_body.${path}` : path;
}

/** The value at `path` through own members of objects only, or undefined. */
function valueAt(root: JsonObject, path: readonly string[]): Json | undefined {
  let node: Json | undefined = root;
  for (const key of path) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

function isSize(v: Json | undefined): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}
