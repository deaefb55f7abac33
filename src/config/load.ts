import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { ZodIssue } from 'zod';
import { quoteFlowReferences } from './flow-references.js';
import { coerceWholeReferences, envReferences, filledFromEnv, type EnvReference } from './env-refs.js';
import { issueMessage, quoteValue } from './quote.js';
import { configSchema, type ConfigFile } from './schema.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Replaces ${NAME} (and ${NAME:-default}) in every string value. An unset variable becomes the
 * empty string, so an optional secret left unset reads as "absent" and required ones fail validation.
 * A value that is one whole reference is then made the number or boolean its setting takes
 * (env-refs.ts), so `port: ${PORT}` works.
 */
export function substituteEnv(value: unknown, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, dflt?: string) => {
      const v = env[name];
      return v !== undefined && v !== '' ? v : (dflt ?? '');
    });
  }
  if (Array.isArray(value)) return value.map((v) => substituteEnv(v, env));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env);
    return out;
  }
  return value;
}

/** Drops keys whose value became an empty string after substitution, so defaults apply. */
function dropEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropEmpty);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== '') out[k] = dropEmpty(v);
    return out;
  }
  return value;
}

/** `upstreams[0].project`: a zod issue path as the YAML reader sees it. */
export function keyPath(path: readonly (string | number)[]): string {
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : p)).join('.').replace(/\.\[/g, '[');
}

function describeIssue(file: string, issue: ZodIssue, refs: readonly EnvReference[]): string {
  return `${file}: ${keyPath(issue.path) || '(root)'}: ${issueMessage(issue, filledFromEnv(refs, issue.path))}`;
}

/** The file each validated config came from, so checks made later (vendor options) can name it. */
const sources = new WeakMap<ConfigFile, string>();
/** The values of each validated config that came from ${VAR} references, for the same checks. */
const references = new WeakMap<ConfigFile, readonly EnvReference[]>();

/** Where `cfg` was read from ("config" when it was built in code without `validateConfig`). */
export function configSource(cfg: object): string {
  return sources.get(cfg as ConfigFile) ?? 'config';
}

/** The values of `cfg` its file gave as ${VAR} references (none when it was built in code). */
export function configEnvReferences(cfg: object): readonly EnvReference[] {
  return references.get(cfg as ConfigFile) ?? [];
}

/** Validates a parsed config object; `file` names the source in error messages. */
export function validateConfig(raw: unknown, file: string, env: NodeJS.ProcessEnv = process.env): ConfigFile {
  const refs = envReferences(raw ?? {});
  const data = dropEmpty(substituteEnv(raw ?? {}, env));
  coerceWholeReferences(data, refs, configSchema);
  const result = configSchema.safeParse(data);
  if (!result.success) {
    throw new ConfigError(['invalid configuration', ...result.error.issues.map((i) => describeIssue(file, i, refs))].join('\n  '));
  }
  const cfg = result.data;
  checkReferences(cfg, file, refs);
  sources.set(cfg, file);
  references.set(cfg, refs);
  return cfg;
}

export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`${path}: cannot read the config file (${(e as Error).message})`);
  }
  return validateConfig(parseConfigText(text, path), path, env);
}

/**
 * The file's YAML. `${VAR}` inside `{...}` / `[...]` parses unquoted (flow-references.ts;
 * substitution is after parsing), but only where the file as written does not parse: a file that
 * parses keeps the meaning it has, whatever its quoted strings hold. A file neither way parses is
 * reported as written.
 */
export function parseConfigText(text: string, path: string): unknown {
  try {
    return parseYaml(text);
  } catch (asWritten) {
    try {
      return parseYaml(quoteFlowReferences(text));
    } catch {
      throw new ConfigError(`${path}: not valid YAML: ${(asWritten as Error).message}`);
    }
  }
}

/** Cross-field rules zod cannot express on one field. */
function checkReferences(cfg: ConfigFile, file: string, refs: readonly EnvReference[]): void {
  const problems: string[] = [];
  const names = new Set<string>();
  cfg.upstreams.forEach((u, i) => {
    if (names.has(u.name)) problems.push(`upstreams[${i}].name: duplicate upstream name ${quoteValue(u.name, filledFromEnv(refs, ['upstreams', i, 'name']))}`);
    names.add(u.name);
    u.models.forEach((m, j) => {
      if (!cfg.models[m]) problems.push(`upstreams[${i}].models[${j}]: model ${quoteValue(m, filledFromEnv(refs, ['upstreams', i, 'models', j]))} is not declared under models`);
    });
  });
  for (const [name, m] of Object.entries(cfg.models)) {
    // A priced-at-nothing video model would be served for free by mistake: refuse to start instead.
    if (m.capabilities.includes('video') && m.price.per_second === undefined)
      problems.push(`models.${name}.price.per_second: a video model needs a per-second price`);
    if ((m.capabilities.includes('embedding') || m.capabilities.includes('chat')) && m.price.per_million_input_tokens === undefined)
      problems.push(`models.${name}.price.per_million_input_tokens: a token-billed model needs an input price`);
  }
  if (cfg.limits.backend === 'redis' && !cfg.limits.redis_url) problems.push('limits.redis_url: required when limits.backend is redis');
  // On SIGTERM the drain waits for deliveries in flight, each for up to webhooks.timeout_ms; the
  // process exits at server.shutdown_timeout_ms whatever is left. A delivery allowed to outlast
  // that is cut mid-request with its outcome unrecorded, and sent again once its lease runs out
  // (a second copy, if the receiver had it). An instance that delivers nothing (interval_ms 0)
  // has none in flight.
  const w = cfg.webhooks;
  if (w.interval_ms > 0 && w.timeout_ms >= cfg.server.shutdown_timeout_ms)
    problems.push(
      `webhooks.timeout_ms: ${w.timeout_ms} must be less than server.shutdown_timeout_ms (${cfg.server.shutdown_timeout_ms}): ` +
        'a delivery in flight at shutdown would be cut off mid-request, its outcome unrecorded, and sent again later; lower webhooks.timeout_ms or raise server.shutdown_timeout_ms',
    );
  if (problems.length) throw new ConfigError(['invalid configuration', ...problems.map((p) => `${file}: ${p}`)].join('\n  '));
}
