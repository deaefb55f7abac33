import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { credentialFiles } from '../../src/core/credential-files.js';
import { compileSecrets, configuredSecrets, redact, UpstreamRedactor } from '../../src/core/redact.js';
import { Catalog } from '../../src/routing/catalog.js';

/**
 * Credentials an upstream's options name by file (a service-account key as `key_file`) are hidden
 * exactly as the same credentials given inline are: read once at start, their every secret field,
 * and each line of a private key's body on its own.
 */

function serviceAccount() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    type: 'service_account',
    project_id: 'key-file-project',
    private_key_id: randomBytes(20).toString('hex'),
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: 'svc-key-file@key-file-project.iam.gserviceaccount.com',
    client_id: '104711234567890123456',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: 'https://oauth2.googleapis.com/token',
    universe_domain: 'googleapis.com',
  };
}

function fileHolding(text: string, name = 'sa.json'): string {
  const path = join(mkdtempSync(join(tmpdir(), 'cred-file-')), name);
  writeFileSync(path, text);
  return path;
}

/** The base64 lines of a PEM's body. */
const bodyLines = (pem: string) => pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));

describe('credential files: redaction', () => {
  it('a key file named by key_file gives the secrets the same key given inline gives', () => {
    const sa = serviceAccount();
    const fromFile = configuredSecrets({ options: { key_file: fileHolding(JSON.stringify(sa, null, 2)) } });
    expect(fromFile).toEqual(expect.arrayContaining([sa.private_key, sa.private_key_id, sa.client_email]));
    expect([...fromFile].sort()).toEqual([...configuredSecrets({ options: { service_account: sa } })].sort());
    // The file's shared, public fields are not secrets, nor is its path.
    expect(fromFile).not.toContain('googleapis.com');
    expect(fromFile).not.toContain(sa.token_uri);
  });

  it('hides each line of the private key quoted alone, wrapped across lines, JSON-escaped, and the key id', () => {
    const sa = serviceAccount();
    const r = new UpstreamRedactor(configuredSecrets({ options: { key_file: fileHolding(JSON.stringify(sa)) } }));
    const lines = bodyLines(sa.private_key);
    expect(lines.length).toBeGreaterThan(20);
    for (const line of lines) {
      expect(r.text(`bad key material ${line} rejected`)).toBe('bad key material [redacted] rejected');
      const half = Math.floor(line.length / 2);
      for (const wrapped of [`${line.slice(0, half)}\n${line.slice(half)}`, `${line.slice(0, half)}\\n${line.slice(half)}`]) {
        const out = r.text(`key: ${wrapped} end`);
        expect(out, wrapped).not.toContain(line.slice(0, half));
        expect(out, wrapped).not.toContain(line.slice(half));
      }
    }
    const json = r.json({ error: { message: `key ${sa.private_key_id} of ${sa.client_email} is disabled` } });
    expect(JSON.stringify(json)).not.toContain(sa.private_key_id);
    expect(JSON.stringify(json)).not.toContain(sa.client_email);
  });

  it('a file that is not JSON (a PEM key) counts whole and line by line', () => {
    const { private_key: pem } = serviceAccount();
    const found = configuredSecrets({ options: { private_key_file: fileHolding(pem, 'key.pem') } });
    expect(found).toEqual([pem.trim()]);
    const line = bodyLines(pem)[7]!;
    expect(redact(`quoted ${line}`, compileSecrets(found))).toBe('quoted [redacted]');
  });

  it('reads a file once: contents written later change nothing for the same options', () => {
    const sa = serviceAccount();
    const path = fileHolding(JSON.stringify(sa));
    const options = { key_file: path };
    const first = configuredSecrets({ options });
    writeFileSync(path, JSON.stringify(serviceAccount()));
    expect(configuredSecrets({ options })).toEqual(first);
    expect(credentialFiles(options).get('key_file')).toEqual({ path, text: JSON.stringify(sa) });
  });

  it('a file that cannot be read adds nothing and throws nothing', () => {
    expect(configuredSecrets({ options: { key_file: '/nonexistent/sa.json', access_token: 'static-token-value' } })).toEqual(['static-token-value']);
  });
});

describe('credential files: read at start', () => {
  const config = (options: Record<string, unknown>) =>
    validateConfig(
      {
        upstreams: [
          { name: 'plain', vendor: 'sora', base_url: 'https://a.example', api_key: 'k-0123456789', models: ['m'] },
          { name: 'google', vendor: 'veo', base_url: 'https://b.example', models: ['m'], project: 'p', ...options },
        ],
        models: { m: { capabilities: ['video'], price: { per_second: 0.1 } } },
      },
      'gw.yaml',
    );

  it('a key file that cannot be read stops the start, named by file, upstream and option', () => {
    expect(() => new Catalog(config({ key_file: '/nonexistent/sa.json' }))).toThrow(
      /gw\.yaml: upstreams\[1\]\.key_file: cannot read \/nonexistent\/sa\.json \(ENOENT/,
    );
    expect(() => new Catalog(config({ key_file: '/dev/zero' }))).toThrow(/upstreams\[1\]\.key_file: cannot read \/dev\/zero \(larger than/);
  });

  it('the catalog reads the file: its upstream redacts the key before any call', () => {
    const sa = serviceAccount();
    const path = fileHolding(JSON.stringify(sa));
    const up = new Catalog(config({ key_file: path })).upstream('google')!;
    writeFileSync(path, '{}');
    expect(configuredSecrets(up)).toEqual(expect.arrayContaining([sa.private_key, sa.private_key_id]));
  });
});
