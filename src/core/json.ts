/** Plain JSON values as they travel between clients, the gateway and vendors. */
export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Keys that would let a client reach Object.prototype through a merge. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Finds the first forbidden key anywhere in a value and returns its dotted path, or undefined.
 * JSON.parse keeps "__proto__" as an own property, so the walk sees it. The walk keeps its own
 * stack rather than recursing: JSON that reaches it has been held to a nesting limit, but the walk
 * must not be what breaks (a form field of 100,000 `[` once ran the call stack out here).
 */
export function findForbiddenKey(value: unknown): string | undefined {
  const stack: WalkFrame[] = [];
  const enter = (v: unknown): void => {
    if (Array.isArray(v)) stack.push({ node: v, keys: undefined, next: 0 });
    else if (isObject(v)) stack.push({ node: v, keys: Object.keys(v), next: 0 });
  };
  enter(value);
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const at = top.next++;
    if (top.keys) {
      if (at >= top.keys.length) stack.pop();
      else if (FORBIDDEN_KEYS.has(top.keys[at]!)) return walkPathOf(stack);
      else enter((top.node as JsonObject)[top.keys[at]!]);
    } else if (at >= (top.node as unknown[]).length) stack.pop();
    else enter((top.node as unknown[])[at]);
  }
  return undefined;
}

/** An array or object being walked, and the index (of its elements or its keys) to visit next. */
interface WalkFrame {
  node: JsonObject | unknown[];
  keys: string[] | undefined;
  next: number;
}

/** The path to the item each frame visited last: `a.b[2].c`. */
function walkPathOf(stack: readonly WalkFrame[]): string {
  let path = '';
  for (const frame of stack) {
    const at = frame.next - 1;
    if (!frame.keys) path += `[${at}]`;
    else path = path ? `${path}.${frame.keys[at]}` : frame.keys[at]!;
  }
  return path;
}

/**
 * Recursive merge: objects merge key by key, anything else in `over` replaces what `base` had.
 * Returns a new object; neither input is changed. Callers reject forbidden keys before this runs,
 * and the result is built on null-free plain objects with own-property writes only.
 */
export function deepMerge(base: JsonObject, over: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const key of Object.keys(over)) {
    if (FORBIDDEN_KEYS.has(key)) continue;
    const b = out[key];
    const o = over[key];
    out[key] = isObject(b) && isObject(o) ? deepMerge(b, o) : o;
  }
  return out;
}

/**
 * Merges `over` into `target` in place, with the result `deepMerge(target, over)` would have. For a
 * caller that owns `target` and merges many pieces into it one at a time: a copy of the whole
 * accumulated object per piece makes the work quadratic in the number of pieces, and a client
 * controls that number (one piece per top-level field of its body). Only `target`'s own top level
 * is written; a nested object is merged by copy, so an object `over` brought in by reference (the
 * client's own) is never changed by a later merge.
 */
export function mergeInto(target: JsonObject, over: JsonObject): JsonObject {
  for (const key of Object.keys(over)) {
    if (FORBIDDEN_KEYS.has(key)) continue;
    const b = target[key];
    const o = over[key];
    target[key] = isObject(b) && isObject(o) ? deepMerge(b, o) : o;
  }
  return target;
}

/** Copies `obj` without the listed keys. */
export function omit(obj: JsonObject, keys: Iterable<string>): JsonObject {
  const drop = new Set(keys);
  const out: JsonObject = {};
  for (const k of Object.keys(obj)) if (!drop.has(k)) setOwn(out, k, obj[k]!);
  return out;
}

/**
 * Writes `key` as an own property of `obj`. A parsed vendor answer can hold a member named
 * `__proto__` (JSON.parse makes it an own property), which a plain assignment would turn into a
 * prototype change, or drop; copied with this it comes back to the client as the vendor wrote it.
 */
export function setOwn(obj: JsonObject, key: string, value: Json): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/**
 * The first of `paths` present in `obj`, as written (dotted; a `*` segment stands for any key whose
 * value is an object), or undefined. For refusing fields a vendor body must not take from a client.
 */
export function findPath(obj: JsonObject, paths: readonly string[]): string | undefined {
  for (const path of paths) {
    const hit = walkPath(obj, path.split('.'), 0);
    if (hit !== undefined) return hit;
  }
  return undefined;
}

function walkPath(obj: JsonObject, segments: readonly string[], at: number): string | undefined {
  const seg = segments[at]!;
  const last = at === segments.length - 1;
  const keys = seg === '*' ? Object.keys(obj) : Object.hasOwn(obj, seg) ? [seg] : [];
  for (const key of keys) {
    const v = obj[key];
    if (last) return key;
    if (!isObject(v)) continue;
    const rest = walkPath(v, segments, at + 1);
    if (rest !== undefined) return `${key}.${rest}`;
  }
  return undefined;
}
