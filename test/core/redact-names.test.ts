import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileNames, configuredNames, redact, redactorFor } from '../../src/core/redact.js';

/**
 * The names of the operator's resources without their host, in what an upstream says: an Azure
 * resource, a Google Cloud project or output bucket, an OpenAI organization or project, an AWS account.
 * Which hosts name a resource is the vendor families' knowledge: test/protocols/resource-hosts.test.ts.
 */
describe('the resource names of an upstream configuration', () => {
  it('are the names its vendor family reads in its hosts, the project, organization and account options and the buckets of storage URIs, not the buckets clients may name', () => {
    const names = configuredNames({
      resourceNames: ['MyRes'],
      options: {
        project: 'acme-video-prod',
        location: 'us-central1',
        storage_uri: 'gs://acme-renders/veo/',
        allowed_gcs_buckets: ['customer-inputs'],
        organization: 'org-AbCdEf0123',
        bucket_owner: '123456789012',
        s3_input_prefixes: ['s3://shared-inputs/x'],
        service_account: { token_uri: 'https://oauth2.googleapis.com/token' },
      },
    });
    expect(names.sort()).toEqual(['123456789012', 'acme-renders', 'acme-video-prod', 'myres', 'org-abcdef0123']);
  });

  it('leave out names too short to be told from the words of a message, and the placeholders\' words', () => {
    expect(configuredNames({ resourceNames: ['ai', 'prod'], options: { project: 'prod', organization: 'acme' } })).toEqual([]);
    expect(configuredNames({ resourceNames: ['upstream'], options: { project: 'redacted' } })).toEqual([]);
    expect(compileNames(['abcd'])).toBeUndefined();
  });
});

describe('resource names in upstream text', () => {
  // As the Catalog builds it: the names its vendor family reads in its hosts (protocols/resource-hosts.ts).
  const up = {
    baseUrl: 'https://myres.openai.azure.com/openai',
    apiKey: 'sk-upstream-0123456789',
    options: { project: 'acme-video-prod', storage_uri: 'gs://acme-renders/veo/' },
    resourceNames: ['myres'],
  };
  const r = redactorFor(up);

  it.each([
    ["Resource 'myres' was not found", "Resource '[upstream]' was not found"],
    ['The deployment does not exist on MyRes.', 'The deployment does not exist on [upstream].'],
    ['Permission denied on resource project acme-video-prod (or it may not exist).', 'Permission denied on resource project [upstream] (or it may not exist).'],
    ['projects/acme-video-prod/locations/us-central1 and gs://acme-renders/veo/out.mp4', 'projects/[upstream]/locations/us-central1 and gs://[upstream]/veo/out.mp4'],
    ['see https://myres.cognitiveservices.azure.com/x', 'see https://[upstream].cognitiveservices.azure.com/x'],
    ['{"message":"bad\\nmyres\\tacme-renders\\u0027"}', '{"message":"bad\\n[upstream]\\t[upstream]\\u0027"}'],
    ['path=%2Fmyres%2Facme-renders%2F', 'path=%2F[upstream]%2F[upstream]%2F'],
    ['at https://myres.openai.azure.com/openai/x', 'at [upstream]'],
  ])('%j', (text, expected) => {
    expect(r.text(text)).toBe(expected);
    expect(r.text(expected)).toBe(expected);
  });

  it('leaves the name inside a longer word, and all text elsewhere, as it is', () => {
    for (const text of ['myres2 and myres-old and amyres and my_res and acme-video-prod-2', 'acme-renders_v2 is another bucket'])
      expect(r.text(text), text).toBe(text);
    expect(r.json({ error: { message: 'quota of myres', resource: 'myres' } })).toEqual({ error: { message: 'quota of [upstream]', resource: '[upstream]' } });
    // Not in log lines nor in generated content: a client may write the word.
    expect(redact('Resource myres was not found')).toBe('Resource myres was not found');
    expect(r.ownCredentials('a poem about myres')).toBe('a poem about myres');
  });

  it('removes any name standing as a token, and leaves text without it unchanged', () => {
    const name = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{4,20}$/).filter((n) => !['upstream', 'redacted', 'internal'].includes(n));
    const word = fc.stringMatching(/^[a-zA-Z0-9 .,:;'"()/-]{0,30}$/);
    fc.assert(
      fc.property(name, word, word, fc.constantFrom(' ', '/', ':', '"', '(', '.'), (n, before, after, sep) => {
        const re = compileNames([n])!;
        const plain = `${before}${sep}${after}`;
        if (!plain.toLowerCase().includes(n)) expect(redact(plain, undefined, undefined, re)).toBe(plain);
        const out = redact(`${before}${sep}${n.toUpperCase()}${sep}${after}`, undefined, undefined, re);
        expect(out).toContain(`${sep}[upstream]${sep}`);
        expect(out.toLowerCase().split('[upstream]').join(' ')).not.toMatch(new RegExp(`(^|[^a-z0-9_-])${n.replace(/[-]/g, '\\-')}($|[^a-z0-9_-])`));
      }),
      { numRuns: 2000 },
    );
  });
});
