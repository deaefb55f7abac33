import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { Catalog } from '../../src/routing/catalog.js';
import { checkVendors } from '../../src/vendor-check.js';

/** `port: ${GW_PORT}` was refused ("Expected number, received string"): no number or boolean setting could come from the environment. */

function write(text: string): string {
  const p = join(mkdtempSync(join(tmpdir(), 'cfg-env-')), 'gateway.yaml');
  writeFileSync(p, text);
  return p;
}

const file = `
server:
  host: 127.0.0.1
  port: \${GW_PORT:-18420}
  trust_proxy: \${TRUST_PROXY:-false}
secret: env-scalar-secret-0123456789
metrics:
  enabled: \${METRICS:-true}
upstreams:
  - name: oa
    vendor: openai
    base_url: http://127.0.0.1:18499
    api_key: \${OA_KEY}
    models: [emb]
    timeout_ms: \${OA_TIMEOUT}
    max_batch: \${OA_BATCH}
models:
  emb: { capabilities: [embedding], price: { per_million_input_tokens: 0.02 } }
`;

describe('${VAR} for a number or boolean setting', () => {
  it('a value that is one whole ${VAR} becomes the number or boolean its setting takes', () => {
    const env = { GW_PORT: '18433', TRUST_PROXY: '2', METRICS: 'false', OA_KEY: '12345678901234', OA_TIMEOUT: '5000', OA_BATCH: '64' };
    const cfg = loadConfigFile(write(file), env);
    expect(cfg.server.port).toBe(18433);
    expect(cfg.server.trust_proxy).toBe(2);
    expect(cfg.metrics.enabled).toBe(false);
    expect(cfg.upstreams[0]!.timeout_ms).toBe(5000);
    // A string setting keeps its text, digits or not.
    expect(cfg.upstreams[0]!.api_key).toBe('12345678901234');
    // A vendor option too, once the start's vendor check has read it against the vendor's schema.
    checkVendors(cfg);
    expect(new Catalog(cfg).upstream('oa')!.options).toEqual({ max_batch: 64 });
  });

  it('the :-default applies the same way, and unset optional ones fall back to the setting default', () => {
    const cfg = loadConfigFile(write(file.replace('    timeout_ms: ${OA_TIMEOUT}\n', '')), { OA_KEY: 'k' });
    expect(cfg.server.port).toBe(18420);
    expect(cfg.server.trust_proxy).toBe(false);
    expect(cfg.metrics.enabled).toBe(true);
    expect(cfg.upstreams[0]!.timeout_ms).toBe(30_000);
  });

  it('text that is no number stays a string and is refused with the setting named; so is a reference inside other text', () => {
    expect(() => loadConfigFile(write(file), { GW_PORT: 'eighty' })).toThrow(/server\.port: Expected number, received string/);
    expect(() => loadConfigFile(write(file), { METRICS: 'yes' })).toThrow(/metrics\.enabled: Expected boolean, received string/);
    expect(() => loadConfigFile(write(file.replace('${GW_PORT:-18420}', '"1${GW_PORT}"')), { GW_PORT: '8' })).toThrow(/server\.port: Expected number/);
    // Still bounded as the setting is.
    expect(() => loadConfigFile(write(file), { GW_PORT: '70000' })).toThrow(/server\.port: Number must be less than or equal to 65535/);
    // A trusted proxy address from the environment is still an address.
    expect(loadConfigFile(write(file), { TRUST_PROXY: '10.0.0.1' }).server.trust_proxy).toEqual(['10.0.0.1']);
  });
});
