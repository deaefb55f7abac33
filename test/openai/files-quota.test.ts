import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * POST /v1/files is bounded per account: its live files may take at most
 * `video.files.account_max_bytes` and number at most `account_max_files` (413
 * storage_quota_exceeded, nothing kept), deleting or expiry frees the room, and every upload counts
 * against the video rate limit. Storage is not billed, so a zero balance uploads within those
 * bounds. Before, an account with no balance kept
 * 284 MB after 15 uploads, for 30 days.
 */
const KIB = 1024;
const QUOTA_BYTES = 1_000 * KIB;
let gw: TestGateway;
/** Moves the gateway's clock (file expiry) forward. */
let clockOffsetMs = 0;

beforeAll(async () => {
  gw = await startTestGateway(
    { video: { files: { max_bytes: 600 * KIB, account_max_bytes: QUOTA_BYTES, account_max_files: 4 } } },
    { clock: { now: () => Date.now() + clockOffsetMs } },
  );
});
afterAll(async () => {
  await gw?.close();
});

async function upload(key: string, bytes: number, fields: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
  const form = new FormData();
  form.set('purpose', 'user_data');
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  form.set('file', new Blob([Buffer.alloc(bytes, 7)]), 'data.bin');
  const res = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

async function remove(key: string, id: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/files/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

/** Bytes of every stored file blob of the gateway (all accounts). */
function bytesOnDisk(): number {
  const root = join(gw.dataDir, 'videos', 'files');
  if (!existsSync(root)) return 0;
  let total = 0;
  for (const account of readdirSync(root)) for (const f of readdirSync(join(root, account))) total += statSync(join(root, account, f)).size;
  return total;
}

function expectQuotaRefusal(r: { status: number; json: any }): void {
  expect(r.status).toBe(413);
  expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'storage_quota_exceeded', param: 'file' });
  expect(r.json.error.message).toMatch(/Delete files/);
}

describe('the storage quota of POST /v1/files', () => {
  it('lets a zero balance upload within the quota, refuses past it, and frees the room on delete', async () => {
    const { key, account } = await gw.newKey(0);
    const first = await upload(key, 400 * KIB);
    const second = await upload(key, 400 * KIB);
    expect([first.status, second.status]).toEqual([200, 200]);
    const over = await upload(key, 300 * KIB);
    expectQuotaRefusal(over);
    expect(over.json.error.message).toContain(`${800 * KIB} of its ${QUOTA_BYTES} bytes`);
    // A smaller one still fits; then nothing does, and that is said before the body is read (an
    // upload over max_bytes would otherwise be refused as upload_too_large).
    expect((await upload(key, 200 * KIB)).status).toBe(200);
    expectQuotaRefusal(await upload(key, 700 * KIB));
    expect(bytesOnDisk()).toBeLessThanOrEqual(QUOTA_BYTES);
    expect(await gw.balance(account)).toBe(0);

    expect(await remove(key, first.json.id)).toBe(200);
    expect((await upload(key, 400 * KIB)).status).toBe(200);
  });

  it('refuses a file more than account_max_files', async () => {
    const { key } = await gw.newKey(0);
    for (let i = 0; i < 4; i++) expect((await upload(key, 10)).status).toBe(200);
    const r = await upload(key, 10);
    expectQuotaRefusal(r);
    expect(r.json.error.message).toContain('4 files');
  });

  it('no longer counts an expired file', async () => {
    const { key } = await gw.newKey(0);
    expect((await upload(key, 600 * KIB, { 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': '3600' })).status).toBe(200);
    expect((await upload(key, 400 * KIB)).status).toBe(200);
    expectQuotaRefusal(await upload(key, 100 * KIB));
    clockOffsetMs += 3_601_000;
    expect((await upload(key, 600 * KIB)).status).toBe(200);
  });

  it('records no more than the quota for uploads racing each other, and keeps no refused bytes', async () => {
    const { key } = await gw.newKey(0);
    const before = bytesOnDisk();
    const results = await Promise.all(Array.from({ length: 8 }, () => upload(key, 300 * KIB)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    for (const r of results.filter((x) => x.status !== 200)) expectQuotaRefusal(r);
    expect(bytesOnDisk() - before).toBe(3 * 300 * KIB);
  });
});

describe('the rate limit of POST /v1/files', () => {
  it('counts each stored upload against the video rpm; refused uploads give theirs back', async () => {
    const { key } = await gw.newKey(0, { limits: { video: { rpm: 2 } } });
    // Refused before anything is stored: not counted.
    expect((await upload(key, 10, { purpose: 'nonsense' })).status).toBe(400);
    const ok = await upload(key, 10);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect((await upload(key, 10)).status).toBe(200);
    const limited = await upload(key, 10);
    expect(limited.status).toBe(429);
    expect(limited.json.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
