import type { ZodTypeAny } from 'zod';
import { filledFromEnv } from './config/env-refs.js';
import { ConfigError, configEnvReferences, configSource } from './config/load.js';
import { quoteValue } from './config/quote.js';
import type { ConfigFile } from './config/schema.js';
import { upstreamOptionProblems } from './config/upstream-options.js';
import { embeddingModules, embeddingVendorIds } from './embeddings/vendors/registry.js';
import { videoModules, videoVendors } from './video/vendors/registry.js';

/**
 * Checks what the config schema cannot: every upstream's vendor is known, its options match the schema
 * that vendor declares, and a video model has one vendor. Problems name the file the config came from.
 */
export function checkVendors(cfg: ConfigFile): void {
  const file = configSource(cfg);
  const known = new Set<string>([...videoVendors.keys(), ...embeddingVendorIds]);
  const refs = configEnvReferences(cfg);
  const problems: string[] = [];
  const videoVendorOf = new Map<string, string>();
  cfg.upstreams.forEach((u, i) => {
    if (!known.has(u.vendor)) {
      // Not echoed as it is: a secret put in the wrong place (`vendor: ${OPENAI_API_KEY}`) would be printed.
      const shown = quoteValue(u.vendor, filledFromEnv(refs, ['upstreams', i, 'vendor']));
      problems.push(`${file}: upstreams[${i}].vendor: unknown vendor ${shown} (known: ${[...known].join(', ')})`);
      return; // its models' vendor is unknown: the one problem is enough
    }
    for (const m of u.models) {
      if (!cfg.models[m]?.capabilities.includes('video')) continue;
      const prev = videoVendorOf.get(m);
      if (prev && prev !== u.vendor) problems.push(`${file}: upstreams[${i}].models: video model '${m}' is served by vendors '${prev}' and '${u.vendor}'; a video model takes one vendor's parameters`);
      videoVendorOf.set(m, u.vendor);
    }
  });
  problems.push(...upstreamOptionProblems(cfg, file, (vendor) => optionSchemas.get(vendor), refs));
  if (problems.length) throw new ConfigError(['invalid configuration', ...problems].join('\n  '));
}

/** Each vendor's upstream-options schema, by vendor id (video and embeddings ids never collide). */
const optionSchemas = new Map<string, ZodTypeAny>([
  ...videoModules.map((m) => [m.vendor.id, m.optionsSchema] as const),
  ...embeddingModules.map((m) => [m.id, m.optionsSchema] as const),
]);
