import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceAccountKey } from '../../src/protocols/google/oauth.js';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../src/sim/framework.js';
import { TokenIssuer } from '../../src/sim/google-token.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone } from '../helpers/video.js';

/**
 * A service-account key given as `key_file` (the form `gateway init` writes) is hidden like the same
 * key given inline. A hostile Google stand-in (token endpoint, Veo, Vertex embeddings on one loopback
 * server) quotes parts of the key file in every answer it can: a line of the private key alone,
 * another wrapped across two lines, the key's id and the account's email. Neither the client's
 * answers, nor a job's vendor_data, nor any log line may hold any of them.
 */

const MODEL_PATH = /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/google\/models\/([^/:]+):(\w+)$/;

let sim: SimServer;
let gw: TestGateway;
let key: string;
let sa: ServiceAccountKey;
const issuer = new TokenIssuer();
const logLines: string[] = [];
/** The token endpoint refuses every key, quoting the key file, while this is set. */
let tokenEchoes = false;
let operations = 0;

/** The base64 lines of the private key's body. */
const keyLines = () => sa.private_key.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));

/** What the stand-in quotes of the key file. */
function quote(): string {
  const [, one, , wrapped] = keyLines();
  const half = wrapped!.length / 2;
  return `key material ${one} / ${wrapped!.slice(0, half)}\n${wrapped!.slice(half)} / key id ${sa.private_key_id} / ${sa.client_email}`;
}

/** Everything `quote` shows, each piece long enough not to turn up by chance. */
function pieces(): string[] {
  const [, one, , wrapped] = keyLines();
  const half = wrapped!.length / 2;
  return [one!, wrapped!.slice(0, half), wrapped!.slice(half), sa.private_key_id!, sa.client_email];
}

function leaked(text: string): string[] {
  return pieces().filter((p) => text.includes(p));
}

const googleError = (status: number, grpc: string, message: string): SimReply => ({
  status,
  json: { error: { code: status, status: grpc, message, details: [{ reason: message }] } },
});

function route(req: SimRequest, s: SimServer): SimReply {
  if (req.method === 'POST' && req.path === '/token') {
    if (tokenEchoes) return { status: 400, json: { error: 'invalid_grant', error_description: `bad ${quote()}` } };
    return issuer.handle(req, `${s.url}/token`);
  }
  if (!issuer.isValid(bearer(req))) return googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.');
  const m = MODEL_PATH.exec(req.path);
  const prompt = String(req.json?.instances?.[0]?.prompt ?? '');
  switch (m?.[2]) {
    case 'predictLongRunning':
      if (prompt.includes('[create-echo]')) return googleError(400, 'INVALID_ARGUMENT', `Invalid request; ${quote()}`);
      return { json: { name: `projects/p/locations/us-central1/publishers/google/models/${m[1]}/operations/op-${++operations}` } };
    case 'fetchPredictOperation':
      return { json: { name: req.json?.operationName, done: true, error: { code: 3, message: `Generation refused; ${quote()}`, details: [{ quoted: quote() }] } } };
    case 'predict':
      return googleError(400, 'INVALID_ARGUMENT', `Invalid instance; ${quote()}`);
  }
  return googleError(404, 'NOT_FOUND', 'not found');
}

beforeAll(async () => {
  sim = await SimServer.start('hostile-google', route);
  sa = issuer.newServiceAccount(`${sim.url}/token`, 'key-file-project');
  const keyFile = join(mkdtempSync(join(tmpdir(), 'key-file-')), 'sa.json');
  writeFileSync(keyFile, JSON.stringify(sa, null, 2));
  gw = await startTestGateway(
    {
      upstreams: [
        { name: 'veo-up', vendor: 'veo', base_url: sim.url, project: 'key-file-project', location: 'us-central1', key_file: keyFile, models: ['veo-3.1-generate-001'], timeout_ms: 5_000 },
        { name: 'vertex-up', vendor: 'vertex', base_url: sim.url, project: 'key-file-project', key_file: keyFile, models: ['text-embedding-005'], timeout_ms: 5_000 },
      ],
      models: {
        'veo-3.1-generate-001': { capabilities: ['video'], price: { per_second: 0.4 } },
        'text-embedding-005': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.1 } },
      },
      log_level: 'debug',
    },
    { logSink: { write: (line: string) => void logLines.push(line) } },
  );
  ({ key } = await gw.newKey(1_000));
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const embed = () => call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-005', input: 'a short text' } });
const createVideo = (prompt: string) => call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'veo-3.1-generate-001', prompt } });

describe('a key_file service account is redacted like an inline one', () => {
  it('a token endpoint quoting the key file: not in the answers nor in the log', async () => {
    tokenEchoes = true;
    try {
      const answers = [await embed(), await createVideo('a red fox')];
      for (const r of answers) {
        expect(r.status).toBeGreaterThanOrEqual(500);
        expect(leaked(r.text)).toEqual([]);
      }
    } finally {
      tokenEchoes = false;
    }
    expect(sim.received('POST', '/token').length).toBeGreaterThanOrEqual(2);
    // The refusal was logged, with what it quoted taken out.
    const refusals = logLines.filter((l) => l.includes('token endpoint refused'));
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals.join('\n')).toContain('[redacted]');
    expect(leaked(logLines.join('\n'))).toEqual([]);
  });

  it('Vertex embeddings quoting the key file in a 400: the client sees the message without it', async () => {
    const r = await embed();
    expect(r.status, r.text).toBe(400);
    expect(r.json.error.message).toContain('Invalid instance');
    expect(r.json.error.message).toContain('[redacted]');
    expect(leaked(r.text)).toEqual([]);
    expect(leaked(logLines.join('\n'))).toEqual([]);
  });

  it('Veo quoting the key file when a job is created, and in the failed operation: not in the answer, the job nor vendor_data', async () => {
    const refused = await createVideo('a red fox [create-echo]');
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.error.message).toContain('[redacted]');
    expect(leaked(refused.text)).toEqual([]);

    const made = await createVideo('a red fox');
    expect(made.status, made.text).toBe(200);
    const done = await pollUntilDone(gw, key, made.json.id);
    expect(done.status).toBe('failed');
    const text = JSON.stringify(done);
    expect(done.vendor_data.error.message).toContain('Generation refused');
    expect(text).toContain('[redacted]');
    expect(leaked(text)).toEqual([]);
    expect(leaked(logLines.join('\n'))).toEqual([]);
  });
});
