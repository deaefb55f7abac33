import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installHttpMetrics } from '../../src/ops/http-metrics.js';
import { registry } from '../../src/ops/metrics.js';
import { parse, total, type Samples } from './scrape.js';

/**
 * The route label of every answer is what `req.routeOptions.url` says (or `(unmatched)`), checked
 * against a hook of the test's own that reads it; and every answer is counted exactly once.
 */
let app: FastifyInstance;
const expected = new Map<string, number>();
let ownHookRuns = 0;

beforeAll(async () => {
  app = Fastify({ exposeHeadRoutes: true, routerOptions: { ignoreTrailingSlash: true } });
  installHttpMetrics(app);
  app.addHook('onRequest', (req, _reply, done) => done(req.query && 'fail' in (req.query as object) ? new Error('refused') : undefined));
  app.addHook('onResponse', (req, reply, done) => {
    const key = `${req.routeOptions.url ?? '(unmatched)'} ${req.method} ${reply.statusCode}`;
    expected.set(key, (expected.get(key) ?? 0) + 1);
    done();
  });
  app.get('/plain', { onResponse: [(_req, _reply, done) => (ownHookRuns++, done())] }, async () => ({ ok: true }));
  app.route({ method: ['GET', 'POST'], url: '/both', handler: async () => 'both' });
  app.get('/gone', async (_req, reply) => reply.callNotFound());
  await app.register(
    async (p) => {
      p.get('/', async () => 'root');
      p.get('/items/:id', { onResponse: (_req, _reply, done) => (ownHookRuns++, done()) }, async () => 'item');
    },
    { prefix: '/api' },
  );
  await app.ready();
});
afterAll(() => app?.close());

const scrape = async (): Promise<Samples> => parse(await registry.metrics());
const requests = (s: Samples, route: string, method: string, status: string) =>
  total(s, 'gateway_http_requests_total', { route, method, status });

describe('HTTP metrics', () => {
  it('label each answer with the route template routeOptions.url names, or (unmatched), once each', async () => {
    const before = await scrape();
    const calls: [string, string][] = [
      ['GET', '/plain'],
      ['GET', '/plain/'],
      ['HEAD', '/plain'],
      ['POST', '/both'],
      ['GET', '/both'],
      ['GET', '/api'],
      ['GET', '/api/'],
      ['HEAD', '/api/items/1'],
      ['GET', '/api/items/abc-999'],
      ['GET', '/api/items/x?fail=1'],
      ['GET', '/no/such/route/abc-999'],
      ['DELETE', '/plain'],
      ['GET', '/nowhere?fail=1'],
      ['GET', '/gone'],
    ];
    for (const [method, url] of calls) await app.inject({ method: method as 'GET', url });
    const after = await scrape();

    let counted = 0;
    for (const [key, n] of expected) {
      const [route, method, status] = key.split(' ') as [string, string, string];
      expect(requests(after, route, method, status) - requests(before, route, method, status), key).toBe(n);
      counted += n;
    }
    expect(counted).toBe(calls.length);
    expect(total(after, 'gateway_http_requests_total') - total(before, 'gateway_http_requests_total')).toBe(calls.length);
    expect(total(after, 'gateway_http_request_duration_seconds_count') - total(before, 'gateway_http_request_duration_seconds_count')).toBe(calls.length);

    // The cases the oracle above covers, spelled out.
    expect(expected.get('/plain HEAD 200')).toBe(1);
    expect(expected.get('/api GET 200')).toBe(2);
    expect(expected.get('/api/items/:id GET 500')).toBe(1);
    expect(expected.get('(unmatched) GET 404')).toBe(2); // no route, and callNotFound from a route
    expect(expected.get('(unmatched) DELETE 404')).toBe(1);
    expect(expected.get('(unmatched) GET 500')).toBe(1); // refused in onRequest, with no route
    const keys = [...after.keys()].join('\n');
    expect(keys).not.toContain('abc-999');
    // Routes' own onResponse hooks still run, once per answer (/plain twice, the HEAD of /plain, /api/items twice, its HEAD).
    expect(ownHookRuns).toBe(6);
  });

  it('observe the latency of each answer in its route and method series', async () => {
    const before = await scrape();
    await app.inject({ method: 'GET', url: '/plain' });
    const after = await scrape();
    const labels = { route: '/plain', method: 'GET' };
    const count = 'gateway_http_request_duration_seconds_count';
    expect(total(after, count, labels) - total(before, count, labels)).toBe(1);
    const inf = 'gateway_http_request_duration_seconds_bucket';
    expect(total(after, inf, { ...labels, le: '+Inf' }) - total(before, inf, { ...labels, le: '+Inf' })).toBe(1);
    expect(total(after, 'gateway_http_request_duration_seconds_sum', labels)).toBeGreaterThan(total(before, 'gateway_http_request_duration_seconds_sum', labels));
  });
});
