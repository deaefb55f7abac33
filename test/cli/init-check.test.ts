import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { VENDOR_IDS } from '../../src/cli/init/templates.js';
import { cli } from './harness.js';

const saved = { ...process.env };
afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
});

const ENV = {
  DASHSCOPE_API_KEY: 'k1', ARK_API_KEY: 'k2', GOOGLE_CLOUD_PROJECT: 'p', GOOGLE_APPLICATION_CREDENTIALS: '/dev/null',
  OPENAI_API_KEY: 'k3', AZURE_OPENAI_ENDPOINT: 'https://res.openai.azure.com', AZURE_OPENAI_API_KEY: 'k4', FAL_KEY: 'k5',
  AWS_ACCESS_KEY_ID: 'AKIA', AWS_SECRET_ACCESS_KEY: 's',
};

describe('gateway init and check', () => {
  it('init --vendors (all of them) writes a file that check accepts, secrets only as ${ENV} references', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-init-'));
    const file = join(dir, 'gateway.yaml');
    const r = await cli('init', '--vendors', VENDOR_IDS.join(','), '--output', file);
    expect(r.code, r.err).toBe(0);
    const text = readFileSync(file, 'utf8');
    for (const v of VENDOR_IDS) expect(text).toMatch(new RegExp(`vendor: ${v}\\b`));
    expect(text).toMatch(/api_key: \$\{OPENAI_API_KEY\}/);
    expect(text).toMatch(/FILL IN/);
    expect(text).toMatch(/key_file|service_account|access_token/);
    expect(text).toMatch(/access_key_id: \$\{AWS_ACCESS_KEY_ID\}/);
    Object.assign(process.env, ENV);
    const ok = await cli('check', '--config', file, '--json');
    expect(ok.code, ok.err).toBe(0);
    const report = JSON.parse(ok.out);
    expect(report.valid).toBe(true);
    expect(report.upstreams.map((u: { vendor: string }) => u.vendor).sort()).toEqual([...VENDOR_IDS].sort());
  });

  it('check names what is wrong: a missing environment variable, an unknown vendor; init refuses bad input', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-init-'));
    const file = join(dir, 'gateway.yaml');
    expect((await cli('init', '--vendors', 'sora', '--output', file)).code).toBe(0);
    delete process.env.OPENAI_API_KEY;
    const missing = await cli('check', '--config', file);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/OPENAI_API_KEY/);
    process.env.OPENAI_API_KEY = 'k';
    writeFileSync(file, readFileSync(file, 'utf8').replace('vendor: sora', 'vendor: soar'));
    const unknown = await cli('check', '--config', file);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown vendor 'soar'/);
    expect((await cli('init', '--vendors', 'sora', '--output', file)).code).toBe(2);
    const bad = await cli('init', '--vendors', 'sora,nope', '--output', join(dir, 'x.yaml'));
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/unknown vendor 'nope'/);
  });
});
