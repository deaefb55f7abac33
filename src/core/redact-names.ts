import type { Json, JsonObject } from './json.js';
import { UPSTREAM_HOST } from './redact-hosts.js';

/**
 * The names of the operator's own resources in what an upstream says, without the host around them:
 * a resource quoted in "Resource myres not found", a cloud project id or an output bucket in an error,
 * an organization id in a quota message. They become UPSTREAM_HOST, as their hosts do (redact-urls.ts):
 * which account at which vendor served a request is not the client's business. Applied to upstream
 * text only.
 */

/**
 * Shorter names are left alone. A cloud resource name may have two characters and a bucket three:
 * replacing every "ai" or "prod" of a message would garble it and hide nothing. Five keeps the
 * names operators choose for resources ("myres", "gen-eastus") and leaves words of a message whole
 * unless a resource is named exactly so.
 */
export const MIN_NAME_LENGTH = 5;

/** The placeholders' words: a project named "upstream" would turn every "[upstream]" into "[[upstream]]". */
const PLACEHOLDER_WORDS = new Set(['redacted', 'upstream', 'internal', 'internal-url', 'internal-host']);

/** Option names whose string values name the operator's account, project or resource. */
const NAME_OPTION = /^(?:project|project_id|organization|bucket_owner|account_id|resource|resource_name)$/i;
/** Options holding a storage location of the operator's ("storage_uri": gs://bucket/prefix); not the lists of buckets clients may name. */
const URI_OPTION = /(?:^|_)uri$/i;
const BUCKET_URI = /^(?:gs|s3):\/\/([^/?#\s]+)/i;

/** What names an upstream's resources: its options, and the names its vendor family reads in its hosts. */
export interface NameBearer {
  options: JsonObject;
  /** The resource names of its configured hosts, as its vendor family reads them (protocols/resource-hosts.ts). */
  resourceNames?: readonly string[];
}

/**
 * The names of an upstream's resources: the `resourceNames` of its hosts, the values of options naming
 * its project, organization or account, and the buckets of its storage URIs. Lower-cased, at least
 * MIN_NAME_LENGTH long.
 */
export function configuredNames(up: NameBearer): string[] {
  const out = new Set<string>();
  const add = (name: string) => {
    const n = name.trim().toLowerCase();
    if (n.length >= MIN_NAME_LENGTH && !PLACEHOLDER_WORDS.has(n)) out.add(n);
  };
  for (const name of up.resourceNames ?? []) add(name);
  const walk = (value: Json | undefined, key: string): void => {
    if (typeof value === 'string') {
      if (NAME_OPTION.test(key)) add(value);
      else if (URI_OPTION.test(key)) {
        const bucket = BUCKET_URI.exec(value)?.[1];
        if (bucket) add(bucket);
      }
    } else if (Array.isArray(value)) {
      for (const v of value) walk(v, key);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, k);
    }
  };
  walk(up.options, '');
  return [...out];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The pattern of `names` as whole tokens, in any case: not inside a longer run of letters, digits,
 * "_" and "-" ("myres" stays in "myres2" and "myres-old"), but after a JSON escape ("\nmyres") or a
 * percent-encoded character ("%2Fmyres"), whose last character is a letter or digit of the escape's,
 * not of a word. Undefined for none.
 */
export function compileNames(names: Iterable<string>): RegExp | undefined {
  const list = [...new Set(names)].filter((n) => n.length >= MIN_NAME_LENGTH).sort((a, b) => b.length - a.length);
  if (list.length === 0) return undefined;
  const before = String.raw`(?:(?<![A-Za-z0-9_-])|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4})|(?<=%[0-9A-Fa-f]{2}))`;
  return new RegExp(`${before}(?:${list.map(escapeRegExp).join('|')})(?![A-Za-z0-9_-])`, 'gi');
}

/** `text` with each of the names of `pattern` (see compileNames) replaced by UPSTREAM_HOST. */
export function replaceNames(text: string, pattern: RegExp): string {
  return text.replace(pattern, UPSTREAM_HOST);
}
