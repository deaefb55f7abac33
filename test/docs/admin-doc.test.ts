import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * docs/admin.md documents every admin route: each route the app registers under /admin/ has a
 * "### `METHOD /path`" heading (path parameters written {name}), and each heading names a real route.
 * The README's API section does the same for the /v1 routes.
 */
const doc = readFileSync(resolve(__dirname, '../../docs/admin.md'), 'utf8');
const readme = readFileSync(resolve(__dirname, '../../README.md'), 'utf8');
let gw: TestGateway;

/** "METHOD /path" for every route, read from Fastify's route tree (the only complete list it offers). */
function registeredRoutes(tree: string): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)(?:├── |└── )(.*?)(?: \(([^)]*)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack[depth] = m[2]!;
    if (m[3]) for (const method of m[3].split(', ')) out.push(`${method} ${stack.join('')}`);
  }
  return out;
}

beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => gw?.close());

describe('docs/admin.md', () => {
  it('documents every admin route the app serves, and no route it does not', () => {
    const routes = registeredRoutes(gw.app.printRoutes({ commonPrefix: false }))
      .filter((r) => / \/admin\//.test(r) && !r.startsWith('HEAD '))
      .map((r) => r.replace(/:(\w+)/g, '{$1}'));
    expect(routes.length).toBeGreaterThanOrEqual(10);
    const documented = [...doc.matchAll(/^### `([A-Z]+ \/[^`?]*)(?:\?[^`]*)?`$/gm)].map((m) => m[1]!);
    const missing = routes.filter((r) => !documented.includes(r));
    expect(missing, 'admin routes missing from docs/admin.md').toEqual([]);
    const stale = documented.filter((d) => d.includes('/admin/') && !routes.includes(d));
    expect(stale, 'docs/admin.md headings with no such route').toEqual([]);
    expect(documented).toContain('GET /health');
  });

  it('the README names every /v1 route the app serves, and no route it does not', () => {
    const routes = registeredRoutes(gw.app.printRoutes({ commonPrefix: false }))
      .filter((r) => / \/v1\//.test(r) && !r.startsWith('HEAD '))
      .map((r) => r.replace(/:(\w+)/g, '{$1}'));
    expect(routes.length).toBeGreaterThanOrEqual(15);
    const api = readme.slice(readme.indexOf('## API'), readme.indexOf('## Operations'));
    const named = new Set([...api.matchAll(/`((?:GET|POST|PUT|PATCH|DELETE) \/v1\/[^`?\s]*)/g)].map((m) => m[1]!));
    expect(routes.filter((r) => !named.has(r)), '/v1 routes the README does not name').toEqual([]);
    expect([...named].filter((n) => !routes.includes(n)), 'README routes with no such route').toEqual([]);
  });

  it('GET / answers the index it describes: name, version, documentation and links, without a key', async () => {
    const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8'));
    const r = await fetch(`${gw.url}/`);
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toMatchObject({ name: pkg.name, version: pkg.version, documentation: { admin_api: 'docs/admin.md' }, links: { health: '/health' } });
    for (const link of Object.values(body.links as Record<string, string>)) {
      const status = (await fetch(`${gw.url}${link}`)).status;
      // Every link is a route: public ones answer, the others ask for a key (never a 404).
      expect([200, 401], link).toContain(status);
    }
  });
});
