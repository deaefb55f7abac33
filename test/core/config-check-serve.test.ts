import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { cli } from '../cli/harness.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** `gateway check` said valid to configs `serve` then refused: the same rules must decide both. */

function write(text: string): string {
  const p = join(mkdtempSync(join(tmpdir(), 'cfg-check-')), 'gateway.yaml');
  writeFileSync(p, text);
  return p;
}

const base = `
server: { host: 127.0.0.1, port: 18420 }
database: 'sqlite::memory:'
upstreams:
  - name: oa
    vendor: openai
    base_url: http://127.0.0.1:18499
    api_key: sk-secretvalue-123456789
    models: [emb]
models:
  emb: { capabilities: [embedding], price: { per_million_input_tokens: 0.02 } }
`;

let gw: TestGateway | undefined;
afterAll(async () => gw?.close());

describe('check and serve agree', () => {
  it('check refuses a configured id secret shorter than 16 characters, as the start does', async () => {
    const r = await cli('check', '--config', write(`${base}secret: short\n`));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/gateway\.yaml: secret: must be at least 16 characters/);
    const listed = await cli('check', '--config', write(`${base}secret: [${'o'.repeat(16)}, short]\n`));
    expect(listed.code).toBe(2);
    expect(listed.err).toMatch(/gateway\.yaml: secret\[1\]: must be at least 16 characters/);
    expect((await cli('check', '--config', write(`${base}secret: ${'s'.repeat(16)}\n`))).code).toBe(0);
    expect(() => validateConfig({ secret: 'x'.repeat(15) }, 'gateway.yaml', {})).toThrow(/secret: must be at least 16/);
  });

  it('a headers timeout past 300 s that check accepts also starts (Node checked it against its own request timeout, not the gateway\'s)', async () => {
    const server = 'server: { host: 127.0.0.1, port: 18420, headers_timeout_ms: 400000, request_timeout_ms: 600000 }';
    expect((await cli('check', '--config', write(`${base}secret: ${'s'.repeat(16)}\n`.replace(/server: .*/, server)))).code).toBe(0);
    gw = await startTestGateway({ server: { headers_timeout_ms: 400_000 } });
    expect(gw.app.server.headersTimeout).toBe(400_000);
    // Node's whole-request timeout stays off: the gateway's own (server.request_timeout_ms) answers in the error shape.
    expect(gw.app.server.requestTimeout).toBe(0);
    expect((await fetch(`${gw.url}/health`)).status).toBe(200);
  });
});
