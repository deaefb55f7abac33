import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { escapeMarkerLookalikes } from '../../src/core/lossless-json.js';
import { samplePng } from '../../src/sim/media.js';
import type { InlineMedia } from '../../src/video/types.js';
import { azureSoraVendor } from '../../src/video/vendors/azure-sora/adapter.js';
import { makeInput, makeUpstream } from '../kit/video.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Names a client chooses (a file's name, a form field's name, an inpaint item's file_name) never
 * come back as a number, and leave the gateway as the client sent them: the gateway's internal tag
 * for strings beginning with U+E000 (core/lossless-json.ts) is neither lost nor shown.
 */
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => {
  await gw?.close();
});

/** A multipart body built by hand, so that names go as written (control characters included). */
function multipart(parts: { name: string; filename?: string; type?: string; body: string | Buffer }[]): { body: Buffer; type: string } {
  const boundary = 'marker-lookalike-boundary';
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const file = p.filename === undefined ? '' : `; filename="${p.filename}"`;
    const type = p.type === undefined ? '' : `Content-Type: ${p.type}\r\n`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${file}\r\n${type}\r\n`, 'utf8'), Buffer.from(p.body), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

async function post(path: string, key: string, form: { body: Buffer; type: string }): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': form.type }, body: new Uint8Array(form.body) });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text), text };
}

async function get(path: string, key: string): Promise<any> {
  const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  return res.json();
}

describe('names that look like number markers', () => {
  it.each(['\x01\uE000num:5', '\x7f\uE000num:1e400', '\uE000num:7'])('a file named %j keeps its name as a string', async (name) => {
    const { key } = await gw.newKey(100);
    const up = await post('/v1/files', key, multipart([
      { name: 'purpose', body: 'user_data' },
      { name: 'file', filename: name, type: 'application/octet-stream', body: 'some bytes' },
    ]));
    expect(up.status, up.text).toBe(200);
    // The control character is dropped; what is left is shown as the string it is.
    const shown = name.replace(/[\x00-\x1f\x7f]/g, '');
    expect(up.json.filename).toBe(shown);
    expect((await get(`/v1/files/${up.json.id}`, key)).filename).toBe(shown);
    const list = await get('/v1/files', key);
    expect(list.data.map((f: any) => f.filename)).toEqual([shown]);
  });

  it("a form field's name is an error's param as a string", async () => {
    const { key } = await gw.newKey(100);
    const deep = '['.repeat(70) + ']'.repeat(70);
    const res = await post('/v1/videos', key, multipart([
      { name: 'model', body: 'sora-2' },
      { name: 'prompt', body: 'a cat' },
      { name: '\uE000num:5', type: 'application/json', body: deep },
    ]));
    expect(res.status, res.text).toBe(400);
    expect(res.json.error.param).toBe('\uE000num:5');
  });

  it("an unknown upload field's name is an error's param as a string", async () => {
    const { key } = await gw.newKey(100);
    const res = await post('/v1/files', key, multipart([{ name: 'purpose', body: 'user_data' }, { name: '\uE000num:6', body: 'x' }]));
    expect(res.status, res.text).toBe(400);
    expect(res.json.error.param).toBe('\uE000num:6');
  });

  it("Azure gets an inpaint item's file_name as the client sent it, in the JSON and in the part's name", () => {
    // The native fields as the gateway holds them after reading the client's JSON body.
    const native = JSON.parse(escapeMarkerLookalikes(JSON.stringify({
      inpaint_items: [{ frame_index: 0, type: 'image', url: 'https://img.example/a.png', file_name: '\uE000a.png' }],
      [`\uE000field`]: 'x',
    }))) as JsonObject;
    const media = new Map<string, InlineMedia>([['https://img.example/a.png', { base64: samplePng().toString('base64'), mimeType: 'image/png' }]]);
    const up = makeUpstream({ vendor: 'azure-sora', baseUrl: 'https://myres.openai.azure.com', apiKey: 'k' });
    const req = azureSoraVendor.buildCreate({ ...makeInput({ model: 'sora', native }), media }, up);
    const text = Buffer.from(req.body as Buffer).toString('utf8');
    expect(text).toContain('filename="\uE000a.png"');
    expect(text).toContain('name="\uE000field"');
    expect(text).not.toContain('\uE000str:');
  });
});
