import { credentialFiles, namesCredentialFile } from './credential-files.js';
import type { Json, JsonObject } from './json.js';
import { normalHost } from './redact-hosts.js';

/** Where the one redaction (redact.ts) finds what an upstream's configuration holds that must not leak. */

/** Option names whose string values are credentials (matched against every key, nested included). */
const SECRET_OPTION = /key|secret|token|password|passwd|credential|private|signature|assertion|service_account/i;
/**
 * Option names that look like secrets by the pattern above (or sit in a service account, all of whose
 * fields count) but hold something else, the same for every account: a `universe_domain` of
 * googleapis.com counted as a secret blanked every Google host in upstream text and log lines.
 */
const NOT_SECRET_OPTION = /^(max_batch_tokens|auth_uri|token_uri|auth_provider_x509_cert_url|client_x509_cert_url|type|universe_domain)$/i;

/** The parts of an upstream's configuration that may hold credentials. */
export interface CredentialBearer {
  apiKey?: string;
  options: JsonObject;
}

/**
 * Every credential in an upstream's configuration: the api key, each string option whose name says
 * it is one (access tokens, AWS secrets, service-account keys inline or as JSON text), and what the
 * credential files its options name hold (credential-files.ts; read at start, the same read the
 * upstream's credentials use), taken as an inline value of the same contents would be.
 */
export function configuredSecrets(up: CredentialBearer): string[] {
  const out: string[] = [];
  if (up.apiKey) out.push(up.apiKey);
  collect(up.options, false, out);
  // A bearer built by hand (the probe CLI, tests) may carry no options at all.
  if (up.options) for (const file of credentialFiles(up.options).values()) if ('text' in file) collectFile(file.text, out);
  return out;
}

/**
 * A credential file's secrets: a JSON file's every field (a service-account key file, as the same key
 * given inline), else its whole text (a PEM file, whose lines count one by one: redact-secrets.ts).
 */
function collectFile(text: string, out: string[]): void {
  let parsed: Json | undefined;
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    parsed = undefined;
  }
  if (parsed !== null && typeof parsed === 'object') collect(parsed, true, out);
  else if (text.trim() !== '') out.push(text.trim());
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
      // A credential file's path is not a secret: what the file holds is (configuredSecrets).
      const isSecret = namesCredentialFile(k) ? false : secret ? !NOT_SECRET_OPTION.test(k) : SECRET_OPTION.test(k) && !NOT_SECRET_OPTION.test(k);
      collect(v, isSecret, out);
    }
  }
}

/** Option names whose string values are URLs the operator chose (another base URL, a storage or token endpoint). */
const URL_OPTION = /(?:^|_)(?:url|endpoint)$/i;
/** Public certificate addresses of a service-account file: the same for every account, nothing of the operator's. */
const NOT_URL_OPTION = /^(auth_provider_x509_cert_url|client_x509_cert_url)$/i;

/** The parts of an upstream's configuration that name where it is. */
export interface AddressBearer {
  baseUrl?: string;
  options: JsonObject;
}

/**
 * The hosts of every URL in an upstream's configuration: its base URL and each string option whose
 * name says it is a URL or an endpoint, nested included. Lower-cased, without brackets or a trailing dot.
 */
export function configuredHosts(up: AddressBearer): string[] {
  const out: string[] = [];
  const add = (raw: string) => {
    try {
      const host = normalHost(new URL(raw).hostname);
      if (host !== '') out.push(host);
    } catch {
      // Not a URL: no host to hide.
    }
  };
  if (up.baseUrl) add(up.baseUrl);
  const walk = (value: Json | undefined, isUrl: boolean): void => {
    if (typeof value === 'string') {
      if (isUrl) add(value);
    } else if (Array.isArray(value)) {
      for (const v of value) walk(v, isUrl);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, URL_OPTION.test(k) && !NOT_URL_OPTION.test(k));
    }
  };
  walk(up.options, false);
  return out;
}
