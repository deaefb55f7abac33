import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * The operations' descriptions are loaded by the first request for the document (src/ops/openapi.ts).
 * This file's first request goes to the docs page's own copy of it (/docs/json), not to /openapi.json,
 * so the page's routes must load them as well. Kept in a file of its own: test files do not share
 * modules, so nothing else has loaded them here.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => {
  await gw?.close();
});

describe('the docs page', () => {
  it('serves the described document as its first request', async () => {
    const r = await call(gw, 'GET', '/docs/json');
    expect(r.status).toBe(200);
    const doc = r.json as { paths: Record<string, Record<string, { summary?: string }>>; components: { schemas: Record<string, unknown> } };
    expect(doc.paths['/v1/embeddings']?.['post']?.summary).toBeTruthy();
    expect(Object.keys(doc.components.schemas).length).toBeGreaterThan(0);
    const again = await call(gw, 'GET', '/openapi.json');
    expect(again.json).toEqual(r.json);
  });

  it('serves the page itself', async () => {
    const r = await call(gw, 'GET', '/docs');
    expect(r.status).toBeLessThan(400);
  });
});
