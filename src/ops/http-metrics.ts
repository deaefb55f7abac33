import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import { performance } from 'node:perf_hooks';
import type { CounterSeries, HistogramSeries } from './fast-metrics.js';
import { httpDuration, httpRequests } from './metrics.js';

/** Unmatched paths share one label value: raw paths would make the label set unbounded. */
const UNMATCHED = '(unmatched)';

/** One method of one route template: its latency series and a counter per status, made on first answer. */
interface MethodSeries {
  duration: HistogramSeries;
  statuses: Map<number, CounterSeries>;
}

/** The series of one route template (or of every unmatched answer). */
class RouteSeries {
  private readonly methods = new Map<string, MethodSeries>();

  constructor(private readonly route: string) {}

  record(method: string, status: number, elapsedMs: number): void {
    let m = this.methods.get(method);
    if (!m) this.methods.set(method, (m = { duration: httpDuration.series({ route: this.route, method }), statuses: new Map() }));
    let c = m.statuses.get(status);
    if (!c) m.statuses.set(status, (c = httpRequests.series({ route: this.route, method, status: String(status) })));
    c.inc();
    m.duration.observe(elapsedMs / 1000);
  }
}

/** Every answer without a route, from any app: the series are the registry's, shared anyway. */
const unmatched = new RouteSeries(UNMATCHED);

/**
 * Counts every answer by route template, method and status, and observes its latency.
 *
 * Each route gets an onResponse hook of its own that knows its template (the url Fastify stores as
 * the route's config url, which `req.routeOptions.url` reads), so no request builds
 * `req.routeOptions` (a fresh object of a dozen fields per read) to learn it. Answers without a
 * route (404s, and refusals in the 404 context such as a repeated query parameter) are counted by
 * one app-wide hook: `req.is404` is the same "no route url" test. Call before any route is added.
 * Refusals before routing reach no hook at all: see countAnswerBeforeRouting.
 */
export function installHttpMetrics(app: FastifyInstance): void {
  app.addHook('onResponse', (req, reply, done) => {
    if (req.is404) unmatched.record(req.method, reply.statusCode, reply.elapsedTime);
    done();
  });
  app.addHook('onRoute', (route) => {
    const series = new RouteSeries(route.url);
    const hook: onResponseHookHandler = (req, reply, done) => {
      series.record(req.method, reply.statusCode, reply.elapsedTime);
      done();
    };
    // A new array, never a push: Fastify builds the automatic HEAD route from the options as the
    // caller passed them, and that route gets a hook of its own through this same onRoute hook.
    route.onResponse = route.onResponse === undefined ? [hook] : [...[route.onResponse].flat(), hook];
  });
}

/**
 * Counts, under `(unmatched)`, an answer Fastify's frameworkErrors gives before routing (a malformed
 * %-escape in the path, a path parameter over maxParamLength): no onResponse hook runs for it, so
 * without this an operator would see such refusals in the access log but never in /metrics.
 * Fastify starts no clock for these replies (reply.elapsedTime reads 0), hence a clock of its own.
 */
export function countAnswerBeforeRouting(req: FastifyRequest, reply: FastifyReply): void {
  const started = performance.now();
  reply.raw.once('finish', () => unmatched.record(req.method, reply.statusCode, performance.now() - started));
}
