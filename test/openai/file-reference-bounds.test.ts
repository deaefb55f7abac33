import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { sampleMp4, samplePng } from '../../src/sim/media.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A create with `input_reference: {file_id}` reads the stored file into memory (up to
 * video.files.max_bytes). That read used to come before anything else: a file over the reference
 * limits was read whole only to be refused with 413, a create the rate limit refused read it all
 * the same, and many creates at once held a copy each outside the budget of bytes in flight (40
 * creates of a 64 MiB file took the gateway from 270 MB to 3 GB). Now the recorded size is checked
 * first, the create is admitted next, and the read takes its bytes from the budget.
 */
const MB = 1024 * 1024;
let sims: { wan: SimServer; veo: SimServer };

beforeAll(async () => {
  sims = { wan: await wan.simulator.start({ taskMs: 60_000 }), veo: await veo.simulator.start({ taskMs: 60_000 }) };
});
afterAll(async () => {
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
});
afterEach(() => {
  vi.restoreAllMocks();
});

const gateway = (extra: { server?: object; video?: object }) =>
  startTestGateway({ ...upstreamsFor([{ module: wan, sim: sims.wan }, { module: veo, sim: sims.veo }]), ...extra });

async function uploadFile(gw: TestGateway, key: string, bytes: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.set('purpose', 'user_data');
  form.set('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.id;
}

const createFrom = (gw: TestGateway, key: string, model: string, fileId: string) =>
  call(gw, 'POST', '/v1/videos', { key, body: { model, prompt: 'the frame comes alive', input_reference: { file_id: fileId } }, headers: { connection: 'close' } });

/** Counts the stored files the gateway reads. */
const countReads = (gw: TestGateway) => vi.spyOn(gw.services.video.deps.files, 'bytes');

/** Bytes after a container's end are ignored (as decoders ignore them): a whole image or video of about `size` bytes. */
const padded = (whole: Buffer, size: number) => Buffer.concat([whole, Buffer.alloc(Math.max(0, size - whole.length))]);

describe('a file over the reference limits', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gateway({ video: { uploads: { max_bytes: 4096, max_video_bytes: 20_000 } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('is 413 upload_too_large from its recorded size, image or video, without being read', async () => {
    const { key } = await gw.newKey(100);
    const image = await uploadFile(gw, key, padded(samplePng(), 8_000), 'frame.png');
    const video = await uploadFile(gw, key, padded(sampleMp4(), 30_000), 'clip.mp4');
    const reads = countReads(gw);
    for (const [model, id, limit] of [['wan2.6-i2v', image, 4096], ['veo-3.1-generate-001', video, 20_000]] as const) {
      const r = await createFrom(gw, key, model, id);
      expect(r.status, JSON.stringify(r.json)).toBe(413);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'upload_too_large', param: 'input_reference' });
      expect(r.json.error.message).toContain(String(limit));
    }
    expect(reads).not.toHaveBeenCalled();
  });

  it('a video is held to the video limit, not the image one', async () => {
    const { key } = await gw.newKey(100);
    const id = await uploadFile(gw, key, sampleMp4(), 'clip.mp4');
    expect(sampleMp4().length).toBeGreaterThan(4096);
    const r = await createFrom(gw, key, 'veo-3.1-generate-001', id);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
  });
});

describe('the video rate limit', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gateway({});
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('refuses a create before its file is read; a create refused for its file spends no quota', async () => {
    // The files come from another key of the account: an upload counts against the video limit too.
    const { key: uploader, account } = await gw.newKey(100);
    const key = await gw.createKey(account, { limits: { video: { rpm: 1 } } });
    const junk = await uploadFile(gw, uploader, Buffer.from('not an image at all'), 'notes.txt');
    const frame = await uploadFile(gw, uploader, samplePng(), 'frame.png');
    const reads = countReads(gw);

    const refused = await createFrom(gw, key, 'wan2.6-i2v', junk);
    expect(refused.status, JSON.stringify(refused.json)).toBe(400);
    expect(refused.json.error.code).toBe('unsupported_media_type');
    const made = await createFrom(gw, key, 'wan2.6-i2v', frame);
    expect(made.status, JSON.stringify(made.json)).toBe(200);
    expect(reads).toHaveBeenCalledTimes(2);

    const limited = await createFrom(gw, key, 'wan2.6-i2v', frame);
    expect(limited.status, JSON.stringify(limited.json)).toBe(429);
    expect(limited.json.error.type).toBe('rate_limit_error');
    expect(reads).toHaveBeenCalledTimes(2);
  });
});

describe('the budget of bytes in flight', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gateway({ server: { body_limit_bytes: MB, max_inflight_body_bytes: 16 * MB } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('counts a stored file read while its create runs: one that does not fit is shed with 503 overloaded, unread', async () => {
    const { key } = await gw.newKey(100);
    const id = await uploadFile(gw, key, padded(samplePng(), 3 * MB), 'frame.png');
    const reads = countReads(gw);

    // Two creates hold their 3 MB copies (and 4 MB of base64 each) while the vendor keeps them waiting.
    let release!: () => void;
    sims.wan.inject({ kind: 'hold', until: new Promise<void>((r) => (release = r)) }, 2, /video-synthesis$/);
    const vendorGot = () => sims.wan.received('POST', /video-synthesis$/).length;
    const before = vendorGot();
    const held = [createFrom(gw, key, 'wan2.6-i2v', id), createFrom(gw, key, 'wan2.6-i2v', id)];
    await vi.waitFor(() => expect(vendorGot()).toBe(before + 2), { timeout: 10_000 });
    expect(reads).toHaveBeenCalledTimes(2);

    // A third copy does not fit in 16 MB: shed before the file is read.
    const shed = await createFrom(gw, key, 'wan2.6-i2v', id);
    expect(shed.status, JSON.stringify(shed.json)).toBe(503);
    expect(shed.json.error).toMatchObject({ type: 'server_error', code: 'overloaded' });
    expect(shed.headers.get('retry-after')).toBeTruthy();
    expect(reads).toHaveBeenCalledTimes(2);

    // Answered, the two give their bytes back, and the next create reads the file again.
    release();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    const next = await createFrom(gw, key, 'wan2.6-i2v', id);
    expect(next.status, JSON.stringify(next.json)).toBe(200);
    expect(reads).toHaveBeenCalledTimes(3);
  });
});
