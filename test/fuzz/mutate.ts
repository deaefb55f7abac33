import fc from 'fast-check';
import { fieldValue } from './values.js';

/** Edits anywhere inside a JSON body: a field set to a hostile value, removed, or added next to it. */
type Obj = Record<string, unknown>;
type Path = (string | number)[];

function pathsOf(v: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (prefix.length >= 5 || out.length > 200) return out;
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...prefix, i], out));
  else if (v && typeof v === 'object') for (const k of Object.keys(v)) pathsOf((v as Obj)[k], [...prefix, k], out);
  return out;
}

export type Edit = { at: number; op: 'set' | 'delete' | 'add'; key: string; value: unknown };

export const edit: fc.Arbitrary<Edit> = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('set', 'set', 'delete', 'add'),
  key: fc.oneof(fc.constantFrom('__proto__', 'constructor', 'extra_body', 'stream', 'model', 'input', 'x'), fc.string({ maxLength: 12 })),
  value: fieldValue,
});

/** Applies edits anywhere in the body (nested fields too); an edit at the root replaces or extends it. */
export function mutate(body: Obj, edits: Edit[]): unknown {
  let root: unknown = JSON.parse(JSON.stringify(body));
  for (const edit of edits) {
    // A copy: the generator hands out shared constants ([], {}), which a later edit must not change.
    const e = { ...edit, value: edit.value === undefined ? undefined : JSON.parse(JSON.stringify(edit.value)) };
    const paths = pathsOf(root);
    const path = paths[e.at % paths.length]!;
    if (path.length === 0 && e.op === 'set') {
      root = e.value;
      continue;
    }
    let parent: unknown = root;
    for (const p of path.slice(0, -1)) parent = (parent as Obj)[p as string];
    const last = path[path.length - 1];
    const target = e.op === 'add' ? (path.length === 0 ? root : (parent as Obj)[last as string]) : parent;
    if (!target || typeof target !== 'object') continue;
    if (e.op === 'add') {
      if (Array.isArray(target)) target.push(e.value);
      else Object.defineProperty(target, e.key, { value: e.value, enumerable: true, configurable: true, writable: true });
    } else if (e.op === 'delete') {
      if (Array.isArray(target)) target.splice(Number(last), 1);
      else delete (target as Obj)[last as string];
    } else (target as Obj)[last as string] = e.value;
  }
  return root;
}
