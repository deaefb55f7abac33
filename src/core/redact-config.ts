import type { Json, JsonObject } from './json.js';

/** Where the one redaction (redact.ts) finds what an upstream's configuration holds that must not leak. */

/** Option names whose string values are credentials (matched against every key, nested included). */
const SECRET_OPTION = /key|secret|token|password|passwd|credential|private|signature|assertion|service_account/i;
/** Option names that look like secrets by the pattern above but hold something else. */
const NOT_SECRET_OPTION = /^(key_file|max_batch_tokens|auth_uri|token_uri|auth_provider_x509_cert_url|client_x509_cert_url|type)$/i;

/** The parts of an upstream's configuration that may hold credentials. */
export interface CredentialBearer {
  apiKey?: string;
  options: JsonObject;
}

/**
 * Every credential in an upstream's configuration: the api key, and each string option whose name
 * says it is one (access tokens, AWS secrets, service-account keys inline or as JSON text).
 */
export function configuredSecrets(up: CredentialBearer): string[] {
  const out: string[] = [];
  if (up.apiKey) out.push(up.apiKey);
  collect(up.options, false, out);
  return out;
}

function collect(value: Json | undefined, secret: boolean, out: string[]): void {
  if (typeof value === 'string') {
    if (!secret) return;
    out.push(value);
    // A service account given as its JSON text: its fields are secrets too.
    if (value.trimStart().startsWith('{')) {
      try {
        collect(JSON.parse(value) as Json, true, out);
      } catch {
        // Not JSON after all: the whole value was pushed above.
      }
    }
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) collect(v, secret, out);
    return;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const isSecret = secret ? !NOT_SECRET_OPTION.test(k) : SECRET_OPTION.test(k) && !NOT_SECRET_OPTION.test(k);
      collect(v, isSecret, out);
    }
  }
}
