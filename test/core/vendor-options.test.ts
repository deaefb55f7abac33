import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { checkVendors } from '../../src/vendor-check.js';
import { embeddingModules } from '../../src/embeddings/vendors/registry.js';
import { videoModules } from '../../src/video/vendors/registry.js';

/**
 * Each vendor's upstream options are checked at start against the schema the vendor declares: a wrong
 * type or a misspelt key stops the gateway with the config file and the key path in the message.
 */
type Case = { vendor: string; model: 'video' | 'embedding'; good: Record<string, unknown>; wrong: [key: string, value: unknown, says: RegExp] };

const SA = { client_email: 'svc@p.iam.gserviceaccount.com', private_key: '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n' };

/** One row per vendor: options it accepts, and one wrong type among them. Families: Google, OpenAI, AWS, others. */
const CASES: Case[] = [
  { vendor: 'veo', model: 'video', good: { project: 'p', location: 'us-central1', service_account: SA, storage_uri: 'gs://b/v/', allowed_gcs_buckets: ['b2'] }, wrong: ['allowed_gcs_buckets', 7, /upstreams\[0\]\.allowed_gcs_buckets: /] },
  { vendor: 'vertex', model: 'embedding', good: { project: 'p', key_file: '/etc/key.json', auto_truncate: false, concurrency: 2 }, wrong: ['location', 5, /upstreams\[0\]\.location: Expected string, received number/] },
  { vendor: 'sora', model: 'video', good: { organization: 'org-1', auth_style: 'api-key' }, wrong: ['auth_style', 'basic', /upstreams\[0\]\.auth_style: Invalid enum value/] },
  { vendor: 'azure-sora', model: 'video', good: { api_version: 'preview', deployments: { 'sora-2': 'dep' }, default_size: '1280x720' }, wrong: ['api_version', 2025, /upstreams\[0\]\.api_version: Expected string, received number/] },
  { vendor: 'openai', model: 'embedding', good: { api_version: '2024-10-21', supports_base64: false, max_batch: 16 }, wrong: ['max_batch', 'lots', /upstreams\[0\]\.max_batch: Expected number, received string/] },
  { vendor: 'bedrock', model: 'embedding', good: { region: 'eu-west-1', access_key_id: 'AKIA', secret_access_key: 's' }, wrong: ['region', 'Europe', /upstreams\[0\]\.region: must be an AWS region/] },
  { vendor: 'wan', model: 'video', good: { workspace: 'ws-1', oss_resource_resolve: true }, wrong: ['oss_resource_resolve', 'yes', /upstreams\[0\]\.oss_resource_resolve: Expected boolean, received string/] },
  { vendor: 'fal', model: 'video', good: { trusted_hosts: ['cdn.example.com'], duration_formats: { 'fal-ai/x': 'integer' } }, wrong: ['duration_formats', { 'fal-ai/x': 'seconds' }, /upstreams\[0\]\.duration_formats\.fal-ai\/x: Invalid enum value/] },
  { vendor: 'seedance', model: 'video', good: {}, wrong: ['callback', true, /upstreams\[0\]\.callback: not an upstream key nor an option of vendor 'seedance' \(its options: none;/] },
];

function configFile(vendor: string, model: 'video' | 'embedding', options: Record<string, unknown>): string {
  const doc = {
    upstreams: [{ name: 'u1', vendor, base_url: 'https://upstream.example.com', models: ['m1'], ...options }],
    models: { m1: model === 'video' ? { capabilities: ['video'], price: { per_second: 0.1 } } : { capabilities: ['embedding'], price: { per_million_input_tokens: 0.1 } } },
  };
  const p = join(mkdtempSync(join(tmpdir(), 'vendor-options-')), 'gateway.yaml');
  writeFileSync(p, stringify(doc));
  return p;
}

function problemsOf(path: string): string {
  try {
    checkVendors(loadConfigFile(path, {}));
    return '';
  } catch (e) {
    return (e as Error).message;
  }
}

describe('vendor options are checked at start', () => {
  it('covers every registered vendor', () => {
    const ids = [...videoModules.map((m) => m.vendor.id), ...embeddingModules.map((m) => m.id)].sort();
    expect(CASES.map((c) => c.vendor).sort()).toEqual(ids);
  });

  for (const c of CASES) {
    describe(c.vendor, () => {
      it('accepts the options it documents', () => {
        expect(problemsOf(configFile(c.vendor, c.model, c.good))).toBe('');
      });

      it('refuses a wrong type, naming the file and the key path', () => {
        const [key, value, says] = c.wrong;
        const file = configFile(c.vendor, c.model, { ...c.good, [key]: value });
        const msg = problemsOf(file);
        expect(msg).toContain(`${file}: upstreams[0].${key}`);
        expect(msg).toMatch(says);
      });

      it('refuses an unknown key, listing the options it does know', () => {
        const file = configFile(c.vendor, c.model, { ...c.good, locaton: 'us-east1' });
        const msg = problemsOf(file);
        expect(msg).toContain(`${file}: upstreams[0].locaton: not an upstream key nor an option of vendor '${c.vendor}'`);
        for (const known of Object.keys(c.good)) expect(msg).toContain(known);
      });
    });
  }

  it('checks what a family shares: a Google service-account key without private_key, Bedrock keys without their pair', () => {
    const veo = problemsOf(configFile('veo', 'video', { project: 'p', service_account: { client_email: 'a@b' } }));
    expect(veo).toMatch(/upstreams\[0\]\.service_account: Google service_account has no private_key/);
    const bedrock = problemsOf(configFile('bedrock', 'embedding', { access_key_id: 'AKIA' }));
    expect(bedrock).toMatch(/upstreams\[0\]\.secret_access_key: access_key_id and secret_access_key go together/);
  });

  it('requires the project of a Vertex AI upstream at start instead of failing its first call', () => {
    expect(problemsOf(configFile('veo', 'video', { location: 'us-central1' }))).toMatch(/upstreams\[0\]\.project: Required/);
    expect(problemsOf(configFile('vertex', 'embedding', {}))).toMatch(/upstreams\[0\]\.project: Required/);
  });

  it('reports every problem at once, after the unknown vendor check', () => {
    const msg = problemsOf(configFile('wan', 'video', { workspace: 3, nope: 1 }));
    expect(msg).toMatch(/workspace: Expected string/);
    expect(msg).toMatch(/nope: not an upstream key/);
  });
});
