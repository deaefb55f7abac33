import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/ops/openapi.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * The document at /openapi.json against the app that serves it. Whoever adds a route must
 * document it (src/ops/openapi-operations.ts): the second test names any route that is not.
 */
let gw: TestGateway;
let doc: any;

beforeAll(async () => {
  gw = await startTestGateway({});
  const r = await call(gw, 'GET', '/openapi.json');
  expect(r.status).toBe(200);
  doc = r.json;
});
afterAll(async () => {
  await gw?.close();
});

/** `/v1/videos/:id` -> `/v1/videos/{id}`. */
const toPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function registered(): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  const seen = new Set<string>();
  for (const r of gw.app.routeTable) {
    const key = `${r.method} ${r.url}`;
    if (r.method === 'HEAD' || seen.has(key)) continue;
    seen.add(key);
    // Only the docs page's own assets may stay out of the document.
    if (r.hidden) {
      expect(r.url, 'a hidden route outside /docs').toMatch(/^\/docs(\/|$)/);
      continue;
    }
    out.push({ method: r.method.toLowerCase(), path: toPath(r.url) });
  }
  return out;
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every registered route, and every documented route exists', () => {
    const regs = registered();
    expect(regs.length).toBeGreaterThan(15);
    const undocumented = regs.filter(({ method, path }) => {
      const op = doc.paths?.[path]?.[method];
      return !op?.summary || !op.tags?.length || !Object.keys(op.responses ?? {}).some((s) => /^2\d\d$/.test(s));
    });
    expect(undocumented, 'routes without an entry in src/ops/openapi-operations.ts').toEqual([]);
    const known = new Set(regs.map((r) => `${r.method} ${r.path}`));
    const documented = Object.entries<any>(doc.paths).flatMap(([path, item]) => Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => `${m} ${path}`));
    expect(documented.filter((d) => !known.has(d))).toEqual([]);
  });

  it('describes the video, embeddings, chat, models and admin surfaces with request and response schemas', () => {
    const create = doc.paths['/v1/videos/generations'].post;
    expect(create.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/VideoCreateRequest' });
    expect(create.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/VideoJob' });
    expect(doc.paths['/v1/videos/{id}'].get.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path', required: true }));
    expect(doc.paths['/v1/embeddings'].post.tags).toEqual(['embeddings']);
    expect(Object.keys(doc.paths['/v1/chat/completions'].post.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
    const admin = Object.entries<any>(doc.paths).filter(([p]) => p.startsWith('/admin/'));
    expect(admin.length).toBeGreaterThan(5);
    for (const [, item] of admin) for (const op of Object.values<any>(item)) {
      expect(op.tags).toEqual(['admin']);
      expect(op.security).toEqual([{ adminToken: [] }]);
    }
  });

  it('generates admin request bodies from the zod schemas that validate them', () => {
    const body = doc.paths['/admin/keys'].post.requestBody.content['application/json'].schema;
    expect(body.additionalProperties).toBe(false);
    expect(body.required).toEqual(['account']);
    expect(body.properties.actions.items.enum).toEqual(['video', 'embeddings', 'chat', 'models']);
  });

  it('lists every error of docs/errors.md, each under its status, and x-request-id on every answer', () => {
    const text = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const rows = [...text.matchAll(/^\| ([a-z_]+) \| (\d{3}) \| ([a-z_]+) \|/gm)].map((m) => [m[1]!, Number(m[2])] as const);
    expect(rows.length).toBeGreaterThan(30);
    const inDoc = Object.entries(ERROR_CODES).flatMap(([status, codes]) => codes.map((c) => [c, Number(status)] as const));
    expect(new Set(inDoc.map(([c, s]) => `${c} ${s}`))).toEqual(new Set(rows.map(([c, s]) => `${c} ${s}`)));
    for (const [code, status] of rows) {
      const response = doc.components.responses[`Error${status}`];
      expect(response?.content['application/json'].examples[code], code).toBeDefined();
    }
    for (const [path, item] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(item))
        for (const [status, res] of Object.entries<any>(op.responses)) {
          const resolved = res.$ref ? doc.components.responses[res.$ref.split('/').pop()] : res;
          expect(resolved?.headers?.['x-request-id'], `${method} ${path} ${status}`).toBeDefined();
        }
  });
});
