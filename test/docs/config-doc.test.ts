import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelSchema, upstreamSchema } from '../../src/config/schema-catalog.js';
import { configSchema } from '../../src/config/schema.js';
import { embeddingModules } from '../../src/embeddings/vendors/registry.js';
import { videoModules } from '../../src/video/vendors/registry.js';

/**
 * docs/configuration.md lists every key of the config schema with the schema's default, and no key
 * the schema does not have. A row's first cell names one or more keys (`video.media.max_bytes`,
 * `timeout_ms`: later names without a dot share the first one's parent); its second cell gives one
 * default per key, or one for all. A default in words ("generated", "unset") is fine only for a key
 * the schema gives no default.
 */
const doc = readFileSync(resolve(__dirname, '../../docs/configuration.md'), 'utf8');

interface Row {
  keys: string[];
  defaults: string[];
  text: string;
}

function rows(): Row[] {
  const out: Row[] = [];
  // The key table: the rows before "Upstream entries" (the vendor table after it names vendors).
  for (const line of doc.slice(0, doc.indexOf('Upstream entries:')).split('\n')) {
    if (!line.startsWith('| `')) continue;
    const cells = line.slice(2, -2).split(' | ');
    const names = [...cells[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    if (names.some((n) => n.includes('<') || n.includes('['))) {
      out.push({ keys: names, defaults: [], text: line });
      continue;
    }
    const parent = names[0]!.includes('.') ? names[0]!.slice(0, names[0]!.lastIndexOf('.') + 1) : '';
    const keys = names.map((n, i) => (i > 0 && !n.includes('.') ? parent + n : n));
    const defaults = cells[1]!.trim() === '' ? [] : cells[1]!.split(/, (?![^(]*\))/).map((d) => d.trim());
    out.push({ keys, defaults, text: line });
  }
  return out;
}

function unwrap(s: z.ZodTypeAny): z.ZodTypeAny {
  for (;;) {
    if (s instanceof z.ZodDefault) s = s._def.innerType;
    else if (s instanceof z.ZodOptional || s instanceof z.ZodNullable) s = s.unwrap();
    else if (s instanceof z.ZodEffects) s = s.innerType();
    else return s;
  }
}

/** Every key path under `schema` whose value is not an object of further keys. */
function leaves(schema: z.ZodTypeAny, prefix: string): string[] {
  const s = unwrap(schema);
  if (s instanceof z.ZodObject) return Object.entries(s.shape as z.ZodRawShape).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
  if (s instanceof z.ZodDiscriminatedUnion) {
    const all = (s.options as z.ZodObject<z.ZodRawShape>[]).flatMap((o) => leaves(o, prefix));
    return [...new Set(all)];
  }
  return [prefix];
}

function valueAt(obj: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), obj);
}

const UNITS: Record<string, number> = { KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, ms: 1, s: 1000, min: 60_000, h: 3_600_000, days: 86_400_000 };

/** A documented default as a value, or undefined when it is words (described rather than given). */
function parseDefault(text: string): { value: unknown } | undefined {
  const t = text.replace(/^`(.*)`$/, '$1');
  if (t === 'true' || t === 'false') return { value: t === 'true' };
  if (t === '[]') return { value: [] };
  if (t === '""') return { value: '' };
  const n = /^(\d[\d,]*(?:\.\d+)?)(?: ?(KiB|MiB|GiB|ms|s|min|h|days|M|k))?$/.exec(t);
  if (n) {
    const base = Number(n[1]!.replace(/,/g, ''));
    const unit = n[2];
    return { value: unit === 'M' ? base * 1e6 : unit === 'k' ? base * 1e3 : unit ? base * UNITS[unit]! : base };
  }
  if (text.startsWith('`') && !/\s/.test(t) && !t.includes('*')) return { value: t };
  return undefined;
}

describe('docs/configuration.md matches the config schema', () => {
  const documented = rows();
  const tableKeys = new Set(documented.flatMap((r) => r.keys));
  const schemaKeys = leaves(configSchema, '').filter((k) => !k.startsWith('upstreams') && !k.startsWith('models'));

  it('documents every key of the schema, and no key it does not have', () => {
    expect(schemaKeys.length).toBeGreaterThan(60);
    const missing = schemaKeys.filter((k) => !tableKeys.has(k));
    expect(missing, 'schema keys missing from docs/configuration.md').toEqual([]);
    const stale = [...tableKeys].filter((k) => !k.startsWith('upstreams') && !k.startsWith('models') && !schemaKeys.includes(k));
    expect(stale, 'documented keys the schema does not have').toEqual([]);
  });

  it('gives each key the default the schema gives it', () => {
    const base = configSchema.parse({});
    const s3 = configSchema.parse({ video: { blobs: { backend: 's3', bucket: 'b' } } });
    const wrong: string[] = [];
    for (const r of documented.filter((x) => x.defaults.length > 0)) {
      expect(r.defaults.length === 1 || r.defaults.length === r.keys.length, r.text).toBe(true);
      r.keys.forEach((key, i) => {
        const actual = key.startsWith('video.blobs.') && key !== 'video.blobs.backend' ? valueAt(s3, key) : valueAt(base, key);
        const shown = parseDefault(r.defaults[r.defaults.length === 1 ? 0 : i]!);
        // No default (the bucket is the one this test gave): the doc says in words what happens.
        if (actual === undefined || key === 'video.blobs.bucket') return;
        if (!shown || JSON.stringify(shown.value) !== JSON.stringify(actual)) wrong.push(`${key}: documented ${r.defaults.join(', ')}, schema ${JSON.stringify(actual)}`);
      });
    }
    expect(wrong).toEqual([]);
  });

  it('names every key of an upstream entry and of a model', () => {
    const upstreamText = doc.slice(doc.indexOf('Upstream entries:'), doc.indexOf('| Vendor |'));
    const missingUpstream = Object.keys(upstreamSchema.shape).filter((k) => !upstreamText.includes(`\`${k}\``));
    expect(missingUpstream, 'upstream keys missing from "Upstream entries"').toEqual([]);
    const modelRow = documented.find((r) => r.keys[0] === 'models.<name>')!.text;
    const price = unwrap(modelSchema.shape.price) as z.ZodObject<z.ZodRawShape>;
    const modelKeys = [...Object.keys(modelSchema.shape).filter((k) => k !== 'video'), ...Object.keys(price.shape)];
    expect(modelKeys.filter((k) => !modelRow.includes(`\`${k}\``)), 'model keys missing from the models.<name> row').toEqual([]);
    const videoRow = documented.find((r) => r.keys[0] === 'models.<name>.video')!.text;
    const video = unwrap(modelSchema.shape.video) as z.ZodObject<z.ZodRawShape>;
    expect(Object.keys(video.shape).filter((k) => !videoRow.includes(`\`${k}\``)), 'video overrides missing').toEqual([]);
  });

  it('lists every vendor with each option its schema takes, and none it does not', () => {
    const table = new Map<string, string>();
    for (const line of doc.slice(doc.indexOf('| Vendor |')).split('\n')) {
      const m = /^\| `([a-z-]+)`[^|]* \| (.*) \|$/.exec(line);
      if (m) table.set(m[1]!, m[2]!);
    }
    const schemas: [string, z.ZodTypeAny][] = [...videoModules.map((m) => [m.vendor.id, m.optionsSchema] as [string, z.ZodTypeAny]), ...embeddingModules.map((m) => [m.id, m.optionsSchema] as [string, z.ZodTypeAny])];
    expect([...table.keys()].sort()).toEqual(schemas.map(([id]) => id).sort());
    for (const [id, schema] of schemas) {
      const keys = Object.keys((unwrap(schema) as z.ZodObject<z.ZodRawShape>).shape);
      const row = table.get(id)!;
      expect(keys.filter((k) => !row.includes(`\`${k}\``)), `options of ${id} missing from the vendor table`).toEqual([]);
      const named = [...row.matchAll(/`([a-z_]+)`/g)].map((x) => x[1]!);
      expect(named.filter((n) => !keys.includes(n) && !VALUE_WORDS.has(n)), `${id}: names no option of its schema`).toEqual([]);
    }
  });
});

/** Words the vendor table shows in backticks that are no option names: values, fields of a value, an error code. */
const VALUE_WORDS = new Set(['bearer', 'suffix_s', 'string', 'integer', 'client_email', 'private_key', 'media_location_not_allowed']);

