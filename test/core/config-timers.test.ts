import {
  ZodArray,
  ZodDefault,
  ZodDiscriminatedUnion,
  ZodEffects,
  ZodNullable,
  ZodNumber,
  ZodObject,
  ZodOptional,
  ZodRecord,
  ZodUnion,
  type ZodTypeAny,
} from 'zod';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { SPAN_MAX_MS, TIMER_MAX_MS } from '../../src/config/durations.js';
import { configSchema } from '../../src/config/schema.js';
import { embeddingModules } from '../../src/embeddings/vendors/registry.js';
import { videoModules } from '../../src/video/vendors/registry.js';

/**
 * Node runs a timer longer than 2^31 - 1 ms after 1 ms. A setting above that passed `gateway check`
 * and then made an idle gateway scan its database every millisecond (an interval of 3e9), or exit
 * 1 ms after SIGTERM dropping the requests in flight (a shutdown deadline of 3e9).
 */

/** Every number setting of a schema, by key path (`*` for a record's entries, `[]` for a list's). */
function numberSettings(s: ZodTypeAny, path: string[] = []): [string, ZodNumber][] {
  if (s instanceof ZodDefault || s instanceof ZodOptional || s instanceof ZodNullable) return numberSettings(s._def.innerType, path);
  if (s instanceof ZodEffects) return numberSettings(s._def.schema, path);
  if (s instanceof ZodObject) return Object.entries(s.shape as Record<string, ZodTypeAny>).flatMap(([k, v]) => numberSettings(v, [...path, k]));
  if (s instanceof ZodRecord) return numberSettings(s.valueSchema, [...path, '*']);
  if (s instanceof ZodArray) return numberSettings(s.element, [...path, '[]']);
  if (s instanceof ZodUnion || s instanceof ZodDiscriminatedUnion) return (s.options as ZodTypeAny[]).flatMap((o) => numberSettings(o, path));
  if (s instanceof ZodNumber) return [[path.join('.'), s]];
  return [];
}

const schemas: [string, ZodTypeAny][] = [
  ['config', configSchema],
  ...videoModules.map((m) => [`vendor ${m.vendor.id}`, m.optionsSchema] as [string, ZodTypeAny]),
  ...embeddingModules.map((m) => [`vendor ${m.id}`, m.optionsSchema] as [string, ZodTypeAny]),
];

/** Durations only added to the clock to make a stored date (never a timer): they may pass 2^31 - 1, up to ten years. */
const DATE_SPANS = new Set(['video.link_ttl_ms', 'video.uploads.retention_ms', 'video.files.retention_ms']);

const cfgWith = (extra: Record<string, unknown>) => ({ secret: 'timer-test-secret-0123456789', ...extra });

describe('millisecond settings and Node timers', () => {
  it('every *_ms setting (the config and every vendor option) refuses 2^31 ms; the date-only spans refuse past ten years', () => {
    const found: string[] = [];
    for (const [where, schema] of schemas) {
      for (const [path, n] of numberSettings(schema)) {
        const name = path.split('.').at(-1)!;
        // A timer setting hidden under another name would escape the check below.
        if (/timeout|interval|ttl|lease|deadline|delay|stall|retention|wait|period/.test(name)) expect(name, `${where}: ${path}`).toMatch(/_(ms|seconds|days)$/);
        if (!name.endsWith('_ms')) continue;
        found.push(path);
        if (DATE_SPANS.has(path)) {
          expect(n.safeParse(SPAN_MAX_MS + 1).success, `${where}: ${path} takes more than ten years`).toBe(false);
          expect(n.safeParse(30 * 86_400_000).success, `${where}: ${path}`).toBe(true);
        } else {
          expect(n.safeParse(2 ** 31).success, `${where}: ${path} takes 2^31 ms`).toBe(false);
          expect(n.safeParse(3e9).success, `${where}: ${path} takes 3e9 ms`).toBe(false);
          expect(n.safeParse(TIMER_MAX_MS).success, `${where}: ${path} refuses 2^31 - 1 ms`).toBe(true);
        }
      }
    }
    // The walk reached the settings the attack used (and the date spans it exempts exist).
    for (const p of ['webhooks.interval_ms', 'video.refresher_interval_ms', 'server.shutdown_timeout_ms', 'server.headers_timeout_ms', 'upstreams.[].timeout_ms', ...DATE_SPANS])
      expect(found).toContain(p);
  });

  it('refuses an interval or a deadline Node would run after 1 ms, naming the setting', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ webhooks: { interval_ms: 3e9 } }, /gateway\.yaml: webhooks\.interval_ms: must be at most 2147483647 ms .*1 ms/],
      [{ video: { refresher_interval_ms: 3e9 } }, /gateway\.yaml: video\.refresher_interval_ms: must be at most 2147483647/],
      [{ server: { shutdown_timeout_ms: 3e9 } }, /gateway\.yaml: server\.shutdown_timeout_ms: must be at most 2147483647/],
      [{ server: { headers_timeout_ms: 2 ** 31 } }, /gateway\.yaml: server\.headers_timeout_ms: must be at most 2147483647/],
      [{ video: { thumbnails: { timeout_ms: 2 ** 31 } } }, /gateway\.yaml: video\.thumbnails\.timeout_ms: must be at most/],
    ];
    for (const [extra, message] of cases) expect(() => validateConfig(cfgWith(extra), 'gateway.yaml', {})).toThrow(message);
    // The largest timer Node runs as asked is still accepted, and files may still be kept 30 days (the default).
    const cfg = validateConfig(cfgWith({ server: { shutdown_timeout_ms: TIMER_MAX_MS }, webhooks: { interval_ms: TIMER_MAX_MS } }), 'gateway.yaml', {});
    expect(cfg.server.shutdown_timeout_ms).toBe(TIMER_MAX_MS);
    expect(cfg.video.files.retention_ms).toBe(30 * 86_400_000);
  });

  it("refuses an upstream's timeout_ms past the largest timer", () => {
    const upstream = { name: 'oa', vendor: 'openai', base_url: 'http://127.0.0.1:1', models: ['emb'], timeout_ms: 3e9 };
    const models = { emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } } };
    expect(() => validateConfig(cfgWith({ upstreams: [upstream], models }), 'gateway.yaml', {})).toThrow(/upstreams\[0\]\.timeout_ms: must be at most 2147483647/);
  });
});
