import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { samplePng } from '../../src/sim/media.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { oneVendorGateway } from '../helpers/video.js';

/**
 * Multipart forms whose body ends before the closing boundary, sent with a Content-Length that
 * matches what was sent (so the HTTP layer sees a whole request): each is refused as unreadable,
 * never taken without the parts it lost. Before, the form parser ended such a form quietly: a create
 * cut after `seconds=1` was held and billed at the default 4 seconds, one cut inside `prompt` was
 * refused for a missing prompt, and one cut inside the file part's head was created without its file.
 */
// One gateway on the sora simulator for the file (test/helpers/video.ts).
const env = oneVendorGateway(sora);

const BOUNDARY = 'XyZform';
const field = (name: string, value: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const fileHead = (name: string, type: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="ref.png"\r\nContent-Type: ${type}\r\n\r\n`;
const CLOSE = `--${BOUNDARY}--\r\n`;

/** POSTs exactly `body` (its true length as Content-Length) on a raw socket and parses the answer. */
function post(path: string, key: string, body: Buffer): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const s = connect(Number(new URL(env.gw.url).port), '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (d) => chunks.push(d));
    s.on('error', reject);
    s.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const payload = text.slice(text.indexOf('\r\n\r\n') + 4);
      resolve({ status, json: JSON.parse(payload) });
    });
    const head =
      `POST ${path} HTTP/1.1\r\nHost: env.gw\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    // Not end(): a client's half-close may end the exchange before an answer that takes an upstream call.
    s.write(Buffer.concat([Buffer.from(head), body]));
  });
}

const uploadsStored = () => {
  const dir = join(env.gw.dataDir, 'videos', 'uploads');
  return existsSync(dir) ? readdirSync(dir, { recursive: true }).filter((f) => String(f).includes('.')).length : 0;
};

/** The state a refusal must leave as it was: the balance, the account's videos and files, stored uploads. */
async function ledger(key: string, account: string) {
  return {
    balance: await env.gw.balance(account),
    videos: (await call(env.gw, 'GET', '/v1/videos', { key })).json.data.length,
    files: (await call(env.gw, 'GET', '/v1/files', { key })).json.data.length,
    uploads: uploadsStored(),
  };
}

async function expectUnreadable(path: string, body: string | Buffer) {
  const { key, account } = await env.gw.newKey(100);
  const before = await ledger(key, account);
  const r = await post(path, key, Buffer.isBuffer(body) ? body : Buffer.from(body));
  expect([r.status, r.json.error?.code, r.json.error?.type]).toEqual([400, 'invalid_body', 'invalid_request_error']);
  expect(await ledger(key, account)).toEqual(before);
}

const fields = field('model', 'sora-2') + field('prompt', 'a cut form');

describe('POST /v1/videos with a form cut short', () => {
  it('cut right after the last field value: 400 invalid_body, nothing held, no job', async () => {
    await expectUnreadable('/v1/videos', `${fields}--${BOUNDARY}\r\nContent-Disposition: form-data; name="seconds"\r\n\r\n8`);
    // The delimiter after the value came, its closing dashes did not.
    await expectUnreadable('/v1/videos', `${fields}${field('seconds', '8')}--${BOUNDARY}`);
    await expectUnreadable('/v1/videos', `${fields}${field('seconds', '8')}`);
  });

  it('cut inside a text field: 400 invalid_body rather than an error about the field it lost', async () => {
    await expectUnreadable('/v1/videos', `${field('model', 'sora-2')}--${BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\na cut pro`);
  });

  it('cut inside the input_reference part (its head, its bytes): 400 invalid_body, no upload kept', async () => {
    const head = fileHead('input_reference', 'image/png');
    await expectUnreadable('/v1/videos', fields + head.slice(0, head.indexOf('filename') + 4));
    const png = samplePng();
    await expectUnreadable('/v1/videos', Buffer.concat([Buffer.from(fields + head), png.subarray(0, png.length >> 1)]));
    await expectUnreadable('/v1/videos', Buffer.concat([Buffer.from(fields + head), png, Buffer.from(`\r\n--${BOUNDARY}`)]));
  });

  it('the same form whole is taken and billed as it says', async () => {
    const { key, account } = await env.gw.newKey(100);
    const seconds = await post('/v1/videos', key, Buffer.from(fields + field('seconds', '1') + CLOSE));
    expect([seconds.status, seconds.json.error?.param]).toEqual([400, 'seconds']);
    const r = await post('/v1/videos', key, Buffer.from(fields + field('seconds', '8') + CLOSE));
    expect(r.status).toBe(200);
    expect([r.json.status, r.json.seconds, r.json.prompt]).toEqual(['queued', '8', 'a cut form']);
    // 8 seconds at 0.1 a second, held (in millionths).
    expect(await env.gw.balance(account)).toBe(100_000_000 - 800_000);
  });
});

describe('POST /v1/files with a form cut short', () => {
  const file = Buffer.alloc(5000, 7);
  const head = fileHead('file', 'application/octet-stream');

  it('cut inside the file part (its head, its bytes): 400 invalid_body, no file stored', async () => {
    await expectUnreadable('/v1/files', field('purpose', 'user_data') + head.slice(0, 40));
    await expectUnreadable('/v1/files', Buffer.concat([Buffer.from(field('purpose', 'user_data') + head), file.subarray(0, 3000)]));
  });

  it('cut inside the field after the file, or after the last value: 400 invalid_body, no file stored', async () => {
    const withFile = Buffer.concat([Buffer.from(head), file, Buffer.from('\r\n')]);
    await expectUnreadable('/v1/files', Buffer.concat([withFile, Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_da`)]));
    await expectUnreadable('/v1/files', Buffer.concat([withFile, Buffer.from(`${field('purpose', 'user_data')}--${BOUNDARY}`)]));
  });

  it('the same form whole is stored', async () => {
    const { key } = await env.gw.newKey(100);
    const r = await post('/v1/files', key, Buffer.concat([Buffer.from(head), file, Buffer.from('\r\n' + field('purpose', 'user_data') + CLOSE)]));
    expect(r.status).toBe(200);
    expect([r.json.bytes, r.json.purpose]).toEqual([5000, 'user_data']);
    expect((await call(env.gw, 'GET', '/v1/files', { key })).json.data).toHaveLength(1);
  });
});
