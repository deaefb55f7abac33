import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { sampleMp4 } from '../../src/sim/media.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, type TestGateway } from '../helpers/gateway.js';
import { budgetSuite } from '../helpers/budget-gateway.js';

/**
 * Veo takes an uploaded video inline, as `instances[].video.bytesBase64Encoded` in its JSON body.
 * The create holds one base64 copy of the upload, counted in the budget of bytes in flight
 * (server.max_inflight_body_bytes) with the file. The JSON body is sent from that string: no
 * serialised text of the body (a second copy of the upload, uncounted) and no Buffer of that text
 * (a third) is made, so what the budget counts is what the create holds. A copy that does not fit
 * is 503 `overloaded` before anything is stored or sent.
 */
const MB = 1024 * 1024;
const MODEL = 'veo-3.1-generate-001';
const CREATE = /:predictLongRunning$/;

/** The sample MP4 with a `free` box after its movie: a playable 3 MB video. */
function paddedMp4(size: number): Buffer {
  const free = Buffer.alloc(size - sampleMp4().length);
  free.writeUInt32BE(free.length);
  free.write('free', 4, 'latin1');
  return Buffer.concat([sampleMp4(), free]);
}
const VIDEO = paddedMp4(3 * MB);
const BASE64 = VIDEO.toString('base64');

const suite = budgetSuite(veo);
const gateway = suite.gateway;

async function createWithVideo(gw: TestGateway, key: string): Promise<{ status: number; json: any }> {
  const form = new FormData();
  form.set('model', MODEL);
  form.set('prompt', 'continue this shot');
  form.set('input_reference', new Blob([new Uint8Array(VIDEO)], { type: 'video/mp4' }), 'clip.mp4');
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}`, connection: 'close' }, body: form });
  return { status: res.status, json: await res.json() };
}

describe('an uploaded video sent to Veo inline', () => {
  it('goes out from the one base64 copy the budget counts: no serialised copy of the body, every byte sent', async () => {
    const { gw, budget } = await gateway(32 * MB);
    try {
      const { key } = await gw.newKey(100);
      // The longest text JSON.stringify makes while the create runs.
      let longest = 0;
      const stringify = JSON.stringify;
      vi.spyOn(JSON, 'stringify').mockImplementation(function (this: unknown, ...args: Parameters<typeof JSON.stringify>) {
        const text = stringify.apply(JSON, args);
        if (typeof text === 'string') longest = Math.max(longest, text.length);
        return text;
      });
      const r = await createWithVideo(gw, key);
      vi.mocked(JSON.stringify).mockRestore();
      expect(r.status, JSON.stringify(r.json)).toBe(200);

      const got = suite.sim().lastReceived('POST', CREATE)!;
      expect(got.json.instances[0].video).toEqual({ bytesBase64Encoded: BASE64, mimeType: 'video/mp4' });
      expect(got.headers['content-length']).toBe(String(got.raw.length));
      expect(longest).toBeLessThan(BASE64.length);
      await vi.waitFor(() => expect(budget().inUse).toBe(0));
    } finally {
      await gw.close();
    }
  });

  it('is refused 503 overloaded when the file fits the budget but its copy does not: nothing stored, sent or charged', async () => {
    // The file (3 MB) fits in 6 MB; with its 4 MB base64 copy it does not.
    const { gw, budget } = await gateway(6 * MB);
    try {
      const { key, account } = await gw.newKey(100);
      const balance = await gw.balance(account);
      const sent = suite.sim().received('POST', CREATE).length;
      const r = await createWithVideo(gw, key);
      expect(r.status, JSON.stringify(r.json)).toBe(503);
      expect(r.json.error).toMatchObject({ type: 'server_error', code: 'overloaded' });
      await vi.waitFor(() => expect(budget().inUse).toBe(0));
      expect(suite.sim().received('POST', CREATE)).toHaveLength(sent);
      expect(await gw.balance(account)).toBe(balance);
      expect((await call(gw, 'GET', '/v1/videos', { key })).json.data).toEqual([]);
      const uploads = join(gw.dataDir, 'videos', 'uploads');
      expect(existsSync(uploads) ? readdirSync(uploads, { recursive: true }).filter((f) => String(f).includes('.')) : []).toEqual([]);
    } finally {
      await gw.close();
    }
  });
});
