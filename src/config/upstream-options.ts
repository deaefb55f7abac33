import type { ZodTypeAny } from 'zod';
import { coerceWholeReferences, filledFromEnv, type EnvReference } from './env-refs.js';
import { keyPath } from './load.js';
import { issueMessage } from './quote.js';
import { COMMON_UPSTREAM_KEYS } from './schema-catalog.js';
import type { ConfigFile } from './schema.js';

/**
 * Checks each upstream's vendor options (the keys of an upstream entry beyond the common ones) against
 * the schema its vendor declares, so a mistyped or misspelt option stops the gateway at start, named by
 * file and key path, instead of being ignored or failing the first request. Knows no vendor: the caller
 * passes each vendor's schema. An option given as one whole ${VAR} (`refs`) is made the number or
 * boolean the vendor's schema takes, in `cfg` itself, as the config's own settings are at load.
 */
export function upstreamOptionProblems(
  cfg: Pick<ConfigFile, 'upstreams'>,
  file: string,
  schemaOf: (vendor: string) => ZodTypeAny | undefined,
  refs: readonly EnvReference[] = [],
): string[] {
  const problems: string[] = [];
  cfg.upstreams.forEach((u, i) => {
    const schema = schemaOf(u.vendor);
    if (!schema) return; // an unknown vendor is reported on its own
    const options: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(u)) if (!COMMON_UPSTREAM_KEYS.has(k)) options[k] = v;
    coerceWholeReferences(options, refs, schema, ['upstreams', i]);
    Object.assign(u, options);
    const result = schema.safeParse(options);
    if (result.success) return;
    const at = `upstreams[${i}]`;
    for (const issue of result.error.issues) {
      if (issue.code === 'unrecognized_keys') {
        const known = Object.keys(shapeOf(schema));
        for (const key of issue.keys)
          problems.push(
            `${file}: ${at}.${key}: not an upstream key nor an option of vendor '${u.vendor}'` +
              ` (its options: ${known.length ? known.join(', ') : 'none'}; upstream keys: ${[...COMMON_UPSTREAM_KEYS].join(', ')})`,
          );
      } else {
        const path = keyPath(issue.path);
        const message = issueMessage(issue, filledFromEnv(refs, ['upstreams', i, ...issue.path]));
        problems.push(`${file}: ${at}${path ? `.${path}` : ''}: ${message} (vendor '${u.vendor}' option)`);
      }
    }
  });
  return problems;
}

/** The object shape behind a schema, through refinements (ZodEffects) and lazy wrappers. */
function shapeOf(schema: ZodTypeAny): Record<string, unknown> {
  let s: ZodTypeAny = schema;
  for (let i = 0; i < 5; i++) {
    const def = s._def as { shape?: () => Record<string, unknown>; schema?: ZodTypeAny };
    if (typeof def.shape === 'function') return def.shape();
    if (!def.schema) break;
    s = def.schema;
  }
  return {};
}
