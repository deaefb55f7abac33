import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { clientJson } from '../../src/core/lossless-json.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * The OpenAPI document is written once per app and served from that text: /openapi.json and
 * /docs/json answer the same bytes the serializer makes of the document, request after request,
 * and the document is not built or written again for each request.
 */
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => {
  await gw?.close();
});

async function get(path: string): Promise<{ type: string | null; bytes: Buffer }> {
  const r = await fetch(gw.url + path);
  expect(r.status, path).toBe(200);
  return { type: r.headers.get('content-type'), bytes: Buffer.from(await r.arrayBuffer()) };
}

describe('the OpenAPI document text', () => {
  it('is the same bytes on every request and on both routes, as the serializer writes the document', async () => {
    const first = await get('/openapi.json');
    const expected = Buffer.from(clientJson(gw.app.swagger()));
    expect(first.type).toBe('application/json; charset=utf-8');
    expect(first.bytes.equals(expected)).toBe(true);
    for (const path of ['/openapi.json', '/docs/json', '/docs/json']) {
      const again = await get(path);
      expect(again.type, path).toBe('application/json; charset=utf-8');
      expect(again.bytes.equals(expected), path).toBe(true);
    }
    const yaml = await get('/docs/yaml');
    expect((await get('/docs/yaml')).bytes.equals(yaml.bytes)).toBe(true);
    expect(yaml.bytes.toString()).toContain('openapi: 3.1.0');
  });

  it('is not made again for each request', async () => {
    await get('/openapi.json');
    const built = vi.spyOn(gw.app, 'swagger');
    try {
      for (let i = 0; i < 5; i++) {
        await get('/openapi.json');
        await get('/docs/json');
      }
      expect(built).not.toHaveBeenCalled();
    } finally {
      built.mockRestore();
    }
  });
});
