import {
  ZodArray,
  ZodBoolean,
  ZodDefault,
  ZodDiscriminatedUnion,
  ZodEffects,
  ZodLazy,
  ZodLiteral,
  ZodNullable,
  ZodNumber,
  ZodObject,
  ZodOptional,
  ZodPipeline,
  ZodRecord,
  ZodUnion,
  type ZodTypeAny,
} from 'zod';

export type KeyPath = readonly (string | number)[];

/** A value of the file that holds a ${VAR} reference; `whole` when the value is that one reference and nothing else. */
export interface EnvReference {
  path: KeyPath;
  whole: boolean;
}

const ANY_REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}/;
const WHOLE_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

/** Every string value of the file (before substitution) that holds a ${VAR} reference, by key path. */
export function envReferences(raw: unknown, path: (string | number)[] = [], out: EnvReference[] = []): EnvReference[] {
  if (typeof raw === 'string') {
    if (ANY_REFERENCE.test(raw)) out.push({ path: [...path], whole: WHOLE_REFERENCE.test(raw) });
  } else if (Array.isArray(raw)) raw.forEach((v, i) => envReferences(v, [...path, i], out));
  else if (raw && typeof raw === 'object') for (const [k, v] of Object.entries(raw)) envReferences(v, [...path, k], out);
  return out;
}

/** True when `path` is a value filled (wholly or in part) from the environment, or lies inside one. */
export function filledFromEnv(refs: readonly EnvReference[], path: KeyPath): boolean {
  return refs.some((r) => r.path.length <= path.length && r.path.every((p, i) => p === path[i]));
}

/**
 * Turns a value that was one whole ${VAR} into the number or boolean its setting takes. YAML gives
 * `port: ${GW_PORT}` as a string, and the variable's text is a string too, so without this no
 * number or boolean setting could come from the environment. Only a setting whose schema takes a
 * number (or a boolean) is touched, and only by text that is exactly one: a string setting keeps
 * its text whatever it looks like (an API key of digits stays a string). Changes `data` in place.
 */
export function coerceWholeReferences(data: unknown, refs: readonly EnvReference[], schema: ZodTypeAny, base: KeyPath = []): void {
  for (const ref of refs) {
    if (!ref.whole || ref.path.length <= base.length || !base.every((p, i) => ref.path[i] === p)) continue;
    const path = ref.path.slice(base.length);
    const parent = valueAt(data, path.slice(0, -1));
    const key = path[path.length - 1]!;
    if (!parent || typeof parent !== 'object') continue;
    const value = (parent as Record<string | number, unknown>)[key];
    if (typeof value !== 'string') continue;
    const coerced = scalarFor(value, leavesAt(schema, path));
    if (coerced !== undefined) (parent as Record<string | number, unknown>)[key] = coerced;
  }
}

function valueAt(data: unknown, path: KeyPath): unknown {
  let v = data;
  for (const p of path) {
    if (!v || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[p];
  }
  return v;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function scalarFor(text: string, leaves: readonly ZodTypeAny[]): number | boolean | undefined {
  const t = text.trim();
  const takes = (kind: 'number' | 'boolean') =>
    leaves.some((l) => (kind === 'number' ? l instanceof ZodNumber : l instanceof ZodBoolean) || (l instanceof ZodLiteral && typeof l.value === kind));
  if ((t === 'true' || t === 'false') && takes('boolean')) return t === 'true';
  if (NUMBER.test(t) && takes('number')) return Number(t);
  return undefined;
}

/** The schemas a value at `path` may be checked against, through wrappers and unions. */
function leavesAt(schema: ZodTypeAny, path: KeyPath): ZodTypeAny[] {
  let at = [schema];
  for (const key of path) at = at.flatMap((s) => bases(s).flatMap((b) => child(b, key)));
  return at.flatMap(bases);
}

function child(s: ZodTypeAny, key: string | number): ZodTypeAny[] {
  if (s instanceof ZodObject) {
    const field = typeof key === 'string' ? (s.shape as Record<string, ZodTypeAny>)[key] : undefined;
    return field ? [field] : [];
  }
  if (s instanceof ZodRecord && typeof key === 'string') return [s.valueSchema as ZodTypeAny];
  if (s instanceof ZodArray && typeof key === 'number') return [s.element as ZodTypeAny];
  return [];
}

/** A schema with its defaults, optionals, refinements and pipelines taken off, unions spread out. */
function bases(s: ZodTypeAny, depth = 0): ZodTypeAny[] {
  if (depth > 20) return [];
  if (s instanceof ZodDefault || s instanceof ZodOptional || s instanceof ZodNullable) return bases(s._def.innerType, depth + 1);
  if (s instanceof ZodEffects) return bases(s._def.schema, depth + 1);
  if (s instanceof ZodPipeline) return bases(s._def.in, depth + 1);
  if (s instanceof ZodLazy) return bases(s.schema, depth + 1);
  if (s instanceof ZodUnion || s instanceof ZodDiscriminatedUnion) return (s.options as ZodTypeAny[]).flatMap((o) => bases(o, depth + 1));
  return [s];
}
