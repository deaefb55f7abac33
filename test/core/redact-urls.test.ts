import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { configuredHosts, redact, redactorFor, UpstreamRedactor } from '../../src/core/redact.js';

/**
 * Internal addresses, and the upstream's own, in text from an upstream: an upstream or its proxy
 * quoting where it failed to connect, or the operator's private resource host.
 */
const CONFIGURED = new Set(['mycorp-sora.openai.azure.com', 'storage.example.net']);
const up = (s: string) => redact(s, undefined, CONFIGURED);

describe('redact: internal URLs in upstream text', () => {
  it.each([
    ['connect ECONNREFUSED http://10.0.3.4:8080/internal/v1/jobs?id=7', 'connect ECONNREFUSED [internal-url]'],
    ['upstream https://192.168.1.20/x failed', 'upstream [internal-url] failed'],
    ['proxy http://172.20.0.5:3128 refused', 'proxy [internal-url] refused'],
    ['via http://127.0.0.1:9000/ and http://169.254.169.254/latest/meta-data', 'via [internal-url] and [internal-url]'],
    ['cgnat http://100.64.1.1/x', 'cgnat [internal-url]'],
    ['v6 http://[fd00::1]:8080/x and http://[::1]/ and http://[fe80::1%25eth0]/y', 'v6 [internal-url] and [internal-url] and [internal-url]'],
    ['mapped http://[::ffff:10.0.0.1]/', 'mapped [internal-url]'],
    ['single label http://sora-proxy:8080/v1/videos', 'single label [internal-url]'],
    ['https://localhost/x', '[internal-url]'],
    ['k8s http://gen.video.svc.cluster.local:80/run', 'k8s [internal-url]'],
    ['corp https://gw.mycorp.corp/api and grpc://queue.internal:443', 'corp [internal-url] and [internal-url]'],
    ['numeric http://2130706433/ and http://0x7f.1/', 'numeric [internal-url] and [internal-url]'],
    ['a file file:///var/lib/worker/job.json', 'a file [internal-url]'],
    ['user info http://admin:pw@10.1.2.3/x', 'user info [internal-url]'],
    // Sentence punctuation stays; brackets it opened go with it.
    ['(see http://10.0.0.1/a_(b)).', '(see [internal-url]).'],
    ['at http://10.0.0.1.', 'at [internal-url].'],
    ['"http://10.0.0.1/x", next', '"[internal-url]", next'],
  ])('%j', (text, expected) => {
    expect(up(text)).toBe(expected);
  });

  it.each([
    ['connect ECONNREFUSED 10.0.3.4:8080', 'connect ECONNREFUSED [internal-host]'],
    ['connect ECONNREFUSED ::1:3000', 'connect ECONNREFUSED [internal-host]'],
    ['dial tcp [fd12:3456::7]:443: i/o timeout', 'dial tcp [internal-host]: i/o timeout'],
    ['address:fe80::1%eth0 down', 'address:[internal-host] down'],
    ['getaddrinfo ENOTFOUND sora-gw.corp', 'getaddrinfo ENOTFOUND [internal-host]'],
    ['redis.prod.internal:6379 is down.', '[internal-host] is down.'],
    ['from 192.168.0.7.', 'from [internal-host].'],
    ['host=localhost:5000', 'host=[internal-host]'],
    ['fetching 10.0.3.4:8080/internal/x failed', 'fetching [internal-url] failed'],
  ])('bare %j', (text, expected) => {
    expect(up(text)).toBe(expected);
  });

  it('replaces the hosts of the configured URLs, in a URL or on their own, in any case', () => {
    expect(up('Resource https://mycorp-sora.openai.azure.com/openai/v1/video/generations/jobs not found')).toBe('Resource [upstream] not found');
    expect(up("Host 'MyCorp-Sora.OpenAI.Azure.com' refused the call")).toBe("Host '[upstream]' refused the call");
    expect(up('bucket at storage.example.net:443 is full')).toBe('bucket at [upstream] is full');
    // Another host of the same public domain is not the operator's.
    expect(up('see https://learn.microsoft.com/azure/ai-services/openai/')).toBe('see https://learn.microsoft.com/azure/ai-services/openai/');
  });

  it('replaces names under a configured host, and a configured host with a trailing dot, in any case', () => {
    for (const [text, expected] of [
      ['bucket gs-out.storage.example.net refused', 'bucket [upstream] refused'],
      ['https://Videos.MyCorp-Sora.openai.azure.com/x?y=1 failed', '[upstream] failed'],
      ['http://a.b.storage.example.net.:8080/p?q and s3://x.storage.example.net/k', '[upstream] and [upstream]'],
      ['{"host":"Bucket.Storage.Example.Net."}', '{"host":"[upstream]."}'],
      ['host STORAGE.EXAMPLE.NET.:443 down', 'host [upstream] down'],
      ['at https://storage.example.net./v/1.mp4, then', 'at [upstream], then'],
      ['user@my-bucket.storage.example.net is not allowed', 'user@[upstream] is not allowed'],
      ['\\nbucket.storage.example.net', '\\n[upstream]'],
    ])
      expect(up(text), text).toBe(expected);
    // A longer name that only ends like one (no dot before it), or one that holds it elsewhere, is another host.
    for (const text of ['notstorage.example.net', 'storage.example.net.evil.org', 'example.net', 'https://openai.azure.com/x']) expect(up(text), text).toBe(text);
  });

  it('keeps JSON text valid: escaped slashes, escapes before a URL, \\u escapes inside one', () => {
    expect(up('{"message":"upstream http:\\/\\/10.0.3.4:8080\\/internal\\/x failed"}')).toBe('{"message":"upstream [internal-url] failed"}');
    expect(up('{"u":"http://10.0.0.1/a?b=1\\u0026c=2\\u003cx"}')).toBe('{"u":"[internal-url]\\u003cx"}');
    const pieces = ['http://10.0.0.1/x', '10.0.0.2:80', '\n', '\u00e9', '"', '\\', 'fd00::1', '[::1]', 'http://a.internal', 'x', ' ', '/', ':'];
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ maxLength: 4 })), { maxLength: 12 }), (parts) => {
        const text = JSON.stringify({ error: { message: parts.join('') } });
        const out = up(text);
        expect(() => JSON.parse(out)).not.toThrow();
        expect(up(out)).toBe(out);
      }),
      { numRuns: 5000 },
    );
  });

  it('leaves public URLs, public addresses and ordinary messages as they are', () => {
    for (const text of [
      'See https://platform.openai.com/docs/guides/error-codes for details.',
      'Rate limit reached for requests. Please try again in 20ms.',
      "Invalid value for 'size': 1280x720. Supported: 720x1280, 1280x720.",
      'The duration 12 is not supported for task 3f2a1b4c-0000-4111-8222-123456789abc.',
      'resolver 8.8.8.8 answered for 1.2.3.4:80 at 12:30:45.123',
      'gs://my-bucket/out/video.mp4 and s3://bucket/key.mp4',
      'std::vector, node.js, e.g. this, version 10.0, a::b, ::, 2001:db8::1',
      'https://example.com/a?b=c#d',
    ])
      expect(up(text), text).toBe(text);
  });

  it('applies to upstream text only: not without the hosts (log lines, access lines), not to generated content', () => {
    const text = 'connect ECONNREFUSED http://10.0.3.4:8080/internal and 10.0.0.9:80';
    expect(redact(text)).toBe(text);
    const r = new UpstreamRedactor(['sk-hostile-0123456789abcdef'], ['mycorp-sora.openai.azure.com']);
    expect(r.ownCredentials(text)).toBe(text);
    expect(r.text(text)).toBe('connect ECONNREFUSED [internal-url] and [internal-host]');
    expect(r.optional('at https://mycorp-sora.openai.azure.com/x')).toBe('at [upstream]');
    expect(r.json({ error: { detail: 'http://10.0.0.1/x', ['10.0.0.1']: 1 } })).toEqual({ error: { detail: '[internal-url]', ['[internal-host]']: 1 } });
  });

  it('is idempotent', () => {
    const once = up('a http://10.0.0.1/x?key=s3cr3t b 10.0.0.2 c https://mycorp-sora.openai.azure.com d http://h:1/');
    expect(once).toBe('a [internal-url] b [internal-host] c [upstream] d [internal-url]');
    expect(up(once)).toBe(once);
  });
});

describe('the hosts of an upstream configuration', () => {
  it('are its base URL and every option named *_url or *_endpoint, nested included, but no certificate address', () => {
    const hosts = configuredHosts({
      baseUrl: 'https://MyCorp-Sora.openai.azure.com',
      options: {
        storage_base_url: 'https://storage.example.net/bucket',
        api_version: 'preview',
        auth: { token_endpoint: 'http://[fd00::5]:8443/token' },
        webhook_jwks_url: 'not a url',
        service_account: { token_uri: 'https://oauth2.googleapis.com/token', auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs' },
      },
    });
    expect(hosts).toEqual(['mycorp-sora.openai.azure.com', 'storage.example.net', 'fd00::5']);
  });

  it('are what the redactor of an upstream replaces', () => {
    const r = redactorFor({ baseUrl: 'https://gw.example.org:8443', options: { storage_base_url: 'https://files.example.org' }, apiKey: 'sk-upstream-0123456789' });
    expect(r.text('gw.example.org:8443 says: fetch https://files.example.org/v/1.mp4 denied for sk-upstream-0123456789')).toBe(
      '[upstream] says: fetch [upstream] denied for [redacted]',
    );
  });
});
