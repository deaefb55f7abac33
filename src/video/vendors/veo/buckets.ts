import { errors } from '../../../core/errors.js';
import { isObject, type Json, type JsonObject } from '../../../core/json.js';

/**
 * Vertex reads inputs from and writes outputs to Cloud Storage as the operator's service agent.
 * A client-chosen gs:// URI would let one customer read (into a generated video) or write objects
 * that agent can reach, so every gcsUri and storageUri in the request body must name an allowed
 * bucket: the upstream's `allowed_gcs_buckets` (a list, or "*" for any), plus the bucket of its
 * own `storage_uri`.
 */
export function allowedBuckets(options: JsonObject): Set<string> | '*' {
  const raw = options['allowed_gcs_buckets'];
  if (raw === '*') return '*';
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : [];
  const out = new Set(list.filter((b): b is string => typeof b === 'string').map((b) => b.trim().replace(/^gs:\/\//, '').replace(/\/.*$/, '')));
  const own = bucketOf(options['storage_uri']);
  if (own) out.add(own);
  return out;
}

function bucketOf(uri: Json | undefined): string | undefined {
  return typeof uri === 'string' ? /^gs:\/\/([^/]+)/.exec(uri)?.[1] : undefined;
}

/** Throws a 400 naming the first gcsUri/storageUri outside the allowed buckets. */
export function checkBuckets(body: JsonObject, allowed: Set<string> | '*'): void {
  if (allowed === '*') return;
  const stack: [Json, string][] = [[body, '']];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (Array.isArray(v)) v.forEach((x, i) => stack.push([x, `${path}[${i}]`]));
    else if (isObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        const here = path ? `${path}.${k}` : k;
        if ((k === 'gcsUri' || k === 'storageUri') && typeof x === 'string') {
          const bucket = bucketOf(x);
          if (!bucket || !allowed.has(bucket))
            throw errors.invalidRequest(`The Cloud Storage bucket of '${here}' is not allowed for this upstream.`, here, 'invalid_parameter');
        } else stack.push([x, here]);
      }
    }
  }
}
