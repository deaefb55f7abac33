import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { videoModule as wan } from '../../src/video/vendors/wan/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * An image input_reference cut short in transfer still has the header a sniffer reads (type and
 * size), so it used to be stored, held for and sent to the vendor, which refused it. Its container
 * must be whole: 400 invalid_media naming input_reference, with nothing held and nothing sent.
 */
const fixture = (name: string) => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url));
const images = [
  { name: 'frame.png', type: 'image/png', label: 'PNG' },
  { name: 'frame.jpg', type: 'image/jpeg', label: 'JPEG' },
  { name: 'frame.webp', type: 'image/webp', label: 'WebP' },
].map((i) => ({ ...i, bytes: fixture(i.name) }));

let gw: TestGateway;
let sims: { wan: SimServer; veo: SimServer };

beforeAll(async () => {
  sims = { wan: await wan.simulator.start({ taskMs: 300 }), veo: await veo.simulator.start({ taskMs: 300 }) };
  gw = await startTestGateway(upstreamsFor([{ module: wan, sim: sims.wan }, { module: veo, sim: sims.veo }]));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(sims ?? {}).map((s) => s.close()));
});

async function post(path: string, key: string, form: FormData) {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, json: (await res.json()) as any };
}

function createForm(model: string, file: Buffer, name: string, type: string): FormData {
  const form = new FormData();
  form.set('model', model);
  form.set('prompt', 'the first frame comes to life');
  form.set('input_reference', new Blob([new Uint8Array(file)], { type }), name);
  return form;
}

const sent = () => sims.wan.received('POST', /./).length + sims.veo.received('POST', /./).length;

describe('an image input_reference must be whole', () => {
  for (const img of images) {
    for (const [model, cut] of [['wan2.6-i2v', 0.5], ['veo-3.1-generate-001', 0.9], ['wan2.6-i2v', 0.99]] as const) {
      it(`a ${img.label} cut to ${Math.round(cut * 100)}% is 400 invalid_media on ${model}, nothing held or sent`, async () => {
        const { key, account } = await gw.newKey(100);
        const before = sent();
        const balance = await gw.balance(account);
        const truncated = img.bytes.subarray(0, Math.floor(img.bytes.length * cut));
        const r = await post('/v1/videos', key, createForm(model, truncated, img.name, img.type));
        expect(r.status, JSON.stringify(r.json)).toBe(400);
        expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_media', param: 'input_reference' });
        expect(r.json.error.message).toContain(`not a whole ${img.label} image`);
        expect(sent()).toBe(before);
        expect(await gw.balance(account)).toBe(balance);
      });
    }

    it(`the whole ${img.label} is taken`, async () => {
      const { key } = await gw.newKey(100);
      const r = await post('/v1/videos', key, createForm('wan2.6-i2v', img.bytes, img.name, img.type));
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json.status).toBe('queued');
    });
  }

  it('a whole JPEG with fill bytes before a marker (the standard allows any number) is taken', async () => {
    const jpg = images[1]!.bytes;
    const next = 4 + jpg.readUInt16BE(4); // the segment after APP0
    const padded = Buffer.concat([jpg.subarray(0, next), Buffer.from([0xff, 0xff]), jpg.subarray(next)]);
    const { key } = await gw.newKey(100);
    const r = await post('/v1/videos', key, createForm('wan2.6-i2v', padded, 'frame.jpg', 'image/jpeg'));
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.status).toBe('queued');
  });

  it('a truncated PNG uploaded to /v1/files and given as {file_id} is refused the same way', async () => {
    const { key } = await gw.newKey(100);
    const upload = new FormData();
    upload.set('purpose', 'vision');
    upload.set('file', new Blob([new Uint8Array(images[0]!.bytes.subarray(0, 300))], { type: 'image/png' }), 'frame.png');
    const file = await post('/v1/files', key, upload);
    expect(file.status).toBe(200);
    const before = sent();
    const res = await fetch(`${gw.url}/v1/videos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'wan2.6-i2v', prompt: 'x', input_reference: { file_id: file.json.id } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'invalid_media', param: 'input_reference' });
    expect(sent()).toBe(before);
  });
});
