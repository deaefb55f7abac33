/**
 * Object-store locations a client names in a request body. A vendor that reads such a location
 * (a `gs://` or an `s3://` object) reads it with the upstream's own identity, not the client's, so
 * a location the gateway does not allow must be refused wherever it appears in what is forwarded.
 * The walk is the same for every store; the scheme and what is allowed are the caller's.
 */

/** The nesting the walk follows at most: request bodies are bounded at 64 levels already (http/json-depth.ts), this keeps it finite. */
const MAX_DEPTH = 128;

/**
 * Whether `s` names a location of `scheme` (`gs`, `s3`) as a vendor's reader may still take it: in
 * any letter case, after leading blanks.
 */
export function isLocationOf(scheme: string, s: string): boolean {
  let re = SCHEMES.get(scheme);
  if (!re) SCHEMES.set(scheme, (re = new RegExp(`^\\s*${scheme.replace(/[^a-z0-9]/gi, '\\$&')}://`, 'i')));
  return re.test(s);
}

const SCHEMES = new Map<string, RegExp>();

/**
 * The first string anywhere in `value` (object values and array items, depth first) that names a
 * location of `scheme` not `allowed` (which sees it without leading or trailing blanks); undefined
 * when there is none. Without `allowed`, every location of the scheme is refused.
 */
export function refusedLocation(value: unknown, scheme: string, allowed: (uri: string) => boolean = () => false): string | undefined {
  const walk = (v: unknown, depth: number): string | undefined => {
    if (typeof v === 'string') return isLocationOf(scheme, v) && !allowed(v.trim()) ? v : undefined;
    if (depth >= MAX_DEPTH || v === null || typeof v !== 'object') return undefined;
    for (const x of Object.values(v)) {
      const hit = walk(x, depth + 1);
      if (hit !== undefined) return hit;
    }
    return undefined;
  };
  return walk(value, 0);
}
