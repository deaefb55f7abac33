import { describe, expect, it, vi } from 'vitest';
import { BodyBudget } from '../../src/http/body-budget.js';
import { samplePng } from '../../src/sim/media.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, type TestGateway } from '../helpers/gateway.js';
import { budgetSuite } from '../helpers/budget-gateway.js';

/**
 * A create with an uploaded `input_reference` (a form's file, or a stored file by `{file_id}`) makes
 * a base64 copy of it for the vendors that take media inline: 4/3 of the file, held while the
 * upstream call runs. It counts against the budget of bytes in flight (server.max_inflight_body_bytes)
 * like the file: a copy that does not fit is 503 `overloaded` with nothing held or charged, and what
 * a create took is back once it is over, answered, failed or abandoned by its client.
 */
const MB = 1024 * 1024;
const FILE = 3 * MB;
const COPY = Math.ceil(FILE / 3) * 4;
const suite = budgetSuite(wan);
const gateway = suite.gateway;

const padded = (whole: Buffer, size: number) => Buffer.concat([whole, Buffer.alloc(Math.max(0, size - whole.length))]);
const frame = padded(samplePng(), FILE);

async function uploadFile(gw: TestGateway, key: string): Promise<string> {
  const form = new FormData();
  form.set('purpose', 'user_data');
  form.set('file', new Blob([new Uint8Array(frame)]), 'frame.png');
  const res = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.id;
}

const createBody = (fileId: string) => ({ model: 'wan2.6-i2v', prompt: 'the frame comes alive', input_reference: { file_id: fileId } });
const createFrom = (gw: TestGateway, key: string, fileId: string) => call(gw, 'POST', '/v1/videos', { key, body: createBody(fileId), headers: { connection: 'close' } });

async function createWithForm(gw: TestGateway, key: string): Promise<{ status: number; json: any }> {
  const form = new FormData();
  form.set('model', 'wan2.6-i2v');
  form.set('prompt', 'the frame comes alive');
  form.set('input_reference', new Blob([new Uint8Array(frame)], { type: 'image/png' }), 'frame.png');
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}`, connection: 'close' }, body: form });
  return { status: res.status, json: await res.json() };
}

const vendorCreates = () => suite.sim().received('POST', /video-synthesis$/).length;

describe('BodyBudget.hold', () => {
  it('takes what fits, nothing otherwise, and gives back once however often it is released', () => {
    const budget = new BodyBudget(10);
    expect(budget.hold(11)).toBeUndefined();
    expect(budget.inUse).toBe(0);
    const release = budget.hold(6)!;
    const other = budget.hold(4)!;
    expect(budget.inUse).toBe(10);
    release();
    release();
    expect(budget.inUse).toBe(4);
    other();
    expect(budget.inUse).toBe(0);
  });
});

describe('the base64 copy of an uploaded input_reference', () => {
  it('is refused 503 overloaded when the file fits the budget but its copy does not: nothing held, charged or sent', async () => {
    // The file (3 MB) fits in 6 MB; with its 4 MB copy it does not.
    const { gw, budget } = await gateway(6 * MB);
    try {
      const { key, account } = await gw.newKey(100);
      const id = await uploadFile(gw, key);
      const balance = await gw.balance(account);
      const sent = vendorCreates();

      for (const create of [() => createFrom(gw, key, id), () => createWithForm(gw, key)]) {
        const r = await create();
        expect(r.status, JSON.stringify(r.json)).toBe(503);
        expect(r.json.error).toMatchObject({ type: 'server_error', code: 'overloaded' });
        await vi.waitFor(() => expect(budget().inUse).toBe(0));
      }
      expect(vendorCreates()).toBe(sent);
      expect(await gw.balance(account)).toBe(balance);
      expect((await call(gw, 'GET', '/v1/videos', { key })).json.data).toEqual([]);
    } finally {
      await gw.close();
    }
  });

  it('is counted while the upstream call runs, and given back once whether the create succeeds, fails or its client leaves', async () => {
    const { gw, budget } = await gateway(16 * MB);
    try {
      const { key } = await gw.newKey(100);
      const id = await uploadFile(gw, key);

      // Held by the vendor: the file and its copy are both in the budget.
      let release!: () => void;
      suite.sim().inject({ kind: 'hold', until: new Promise<void>((r) => (release = r)) }, 1, /video-synthesis$/);
      const before = vendorCreates();
      const held = createFrom(gw, key, id);
      await vi.waitFor(() => expect(vendorCreates()).toBe(before + 1), { timeout: 10_000 });
      expect(budget().inUse).toBeGreaterThanOrEqual(FILE + COPY);
      release();
      expect((await held).status).toBe(200);
      await vi.waitFor(() => expect(budget().inUse).toBe(0));

      // The vendor refuses the create.
      suite.sim().inject({ kind: 'status', status: 400, json: { code: 'InvalidParameter', message: 'no' } }, 1, /video-synthesis$/);
      const refused = await createFrom(gw, key, id);
      expect(refused.status, JSON.stringify(refused.json)).toBeGreaterThanOrEqual(400);
      await vi.waitFor(() => expect(budget().inUse).toBe(0));

      // The client leaves while the vendor holds the create: the copy stays counted until the call ends.
      suite.sim().inject({ kind: 'hold', until: new Promise<void>((r) => (release = r)) }, 1, /video-synthesis$/);
      const abort = new AbortController();
      const sentBefore = vendorCreates();
      const left = fetch(`${gw.url}/v1/videos`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify(createBody(id)),
        signal: abort.signal,
      }).catch(() => undefined);
      await vi.waitFor(() => expect(vendorCreates()).toBe(sentBefore + 1), { timeout: 10_000 });
      abort.abort();
      await left;
      await new Promise((r) => setTimeout(r, 100));
      expect(budget().inUse).toBeGreaterThanOrEqual(COPY);
      release();
      await vi.waitFor(() => expect(budget().inUse).toBe(0), { timeout: 10_000 });

      // The multipart form alike.
      const viaForm = await createWithForm(gw, key);
      expect(viaForm.status, JSON.stringify(viaForm.json)).toBe(200);
      await vi.waitFor(() => expect(budget().inUse).toBe(0));
    } finally {
      await gw.close();
    }
  });
});
