import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';

// package.json sits two levels up from both src/routes and dist/routes.
const pkg = createRequire(import.meta.url)('../../package.json') as { name: string; version: string; description?: string };

/**
 * GET /: a small, unauthenticated index for a person or a probe that found the port: what this is,
 * its version, and where to go next. Links to routes another part of the app registers (the API
 * docs) appear only when they exist.
 */
export function registerIndexRoute(app: FastifyInstance): void {
  app.get('/', async () => {
    const links: Record<string, string> = { health: '/health', models: '/v1/models', admin: '/admin/accounts' };
    if (app.hasRoute({ method: 'GET', url: '/docs' })) links.docs = '/docs';
    if (app.hasRoute({ method: 'GET', url: '/console' })) links.console = '/console';
    for (const spec of ['/openapi.json', '/docs/json']) {
      if (app.hasRoute({ method: 'GET', url: spec })) {
        links.openapi = spec;
        break;
      }
    }
    return {
      name: pkg.name,
      version: pkg.version,
      description: pkg.description,
      documentation: { readme: 'README.md', admin_api: 'docs/admin.md', configuration: 'docs/configuration.md', errors: 'docs/errors.md', console: 'docs/console.md' },
      links,
    };
  });
}
