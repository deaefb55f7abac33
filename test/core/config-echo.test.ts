import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { checkVendors } from '../../src/vendor-check.js';

/**
 * A config error goes to a terminal, a CI log, a support ticket. A secret put in the wrong place (a
 * `${OPENAI_API_KEY}` under an enum key, as the vendor) was printed back whole in it.
 */

const KEY = 'sk-proj-TOPSECRET1234567890abcdef';

function write(text: string): string {
  const p = join(mkdtempSync(join(tmpdir(), 'cfg-echo-')), 'gateway.yaml');
  writeFileSync(p, text);
  return p;
}

function upstream(lines: string): string {
  return `
secret: echo-test-secret-0123456789
upstreams:
  - name: up
    base_url: http://127.0.0.1:18499
    models: [m]
${lines}
models:
  m: { capabilities: [video], price: { per_second: 0.1 } }
`;
}

/** The message of whatever loading and the start's vendor check throw, or '' when both pass. */
function problems(text: string, env: NodeJS.ProcessEnv): string {
  try {
    checkVendors(loadConfigFile(write(text), env));
    return '';
  } catch (e) {
    return (e as Error).message;
  }
}

describe('config errors do not echo secrets', () => {
  it("a ${VAR} under a vendor option's enum key: the key is named, the value is not printed", () => {
    const msg = problems(upstream('    vendor: sora\n    auth_style: ${OPENAI_API_KEY}'), { OPENAI_API_KEY: KEY });
    expect(msg).toMatch(/upstreams\[0\]\.auth_style: Invalid enum value\. Expected 'bearer' \| 'api-key', received a 33-character value from the environment \(not shown\)/);
    expect(msg).not.toContain('TOPSECRET');
  });

  it('a ${VAR} under one of the config\'s own enum keys', () => {
    const msg = problems(`log_level: \${OPENAI_API_KEY}\n${upstream('    vendor: sora')}`, { OPENAI_API_KEY: KEY });
    expect(msg).toMatch(/log_level: Invalid enum value/);
    expect(msg).not.toContain('TOPSECRET');
    // Even short: whatever the environment gave is not shown.
    expect(problems(`log_level: \${LEVEL}\n${upstream('    vendor: sora')}`, { LEVEL: 'hunter2' })).not.toContain('hunter2');
  });

  it('an unknown vendor from ${VAR}, or long, or shaped like a credential, is not printed; a short typo still is', () => {
    const fromEnv = problems(upstream('    vendor: ${OPENAI_API_KEY}'), { OPENAI_API_KEY: KEY });
    expect(fromEnv).toMatch(/upstreams\[0\]\.vendor: unknown vendor a 33-character value from the environment \(not shown\) \(known: .*sora/);
    expect(fromEnv).not.toContain('TOPSECRET');
    const written = problems(upstream(`    vendor: ${KEY}`), {});
    expect(written).toMatch(/unknown vendor a 33-character value \(not shown: it may be a secret\)/);
    expect(written).not.toContain('TOPSECRET');
    expect(problems(upstream('    vendor: sk-abcdef123456789'), {})).not.toContain('sk-abcdef123456789');
    // What helps and hides nothing is still quoted.
    expect(problems(upstream('    vendor: soar'), {})).toMatch(/unknown vendor 'soar' \(known:/);
    expect(problems(`log_level: verbose\n${upstream('    vendor: sora')}`, {})).toMatch(/log_level: Invalid enum value\. Expected .*, received 'verbose'/);
  });

  it('an undeclared model named by a ${VAR} is not printed', () => {
    const text = upstream('    vendor: sora').replace('models: [m]', 'models: [m, "${OPENAI_API_KEY}"]');
    const msg = problems(text, { OPENAI_API_KEY: KEY });
    expect(msg).toMatch(/upstreams\[0\]\.models\[1\]: model a 33-character value from the environment \(not shown\) is not declared under models/);
    expect(msg).not.toContain('TOPSECRET');
  });
});
