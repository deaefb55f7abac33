import type { FastifyInstance } from 'fastify';
import type { Counter, Histogram } from 'prom-client';
import { httpDuration, httpRequests } from './metrics.js';

/** Unmatched paths share one label value: raw paths would make the label set unbounded. */
const UNMATCHED = '(unmatched)';

/**
 * Counts every answer by route template, method and status, and observes its latency. The labelled
 * children are cached by a short string key, so a request costs one Map lookup and two increments.
 */
export function installHttpMetrics(app: FastifyInstance): void {
  const counters = new Map<string, Counter.Internal>();
  const histograms = new Map<string, Histogram.Internal<'route' | 'method'>>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? UNMATCHED;
    const method = req.method;
    const status = reply.statusCode;
    const hKey = `${method} ${route}`;
    const cKey = `${status} ${hKey}`;
    let c = counters.get(cKey);
    if (!c) counters.set(cKey, (c = httpRequests.labels({ route, method, status: String(status) })));
    let h = histograms.get(hKey);
    if (!h) histograms.set(hKey, (h = httpDuration.labels({ route, method })));
    c.inc();
    h.observe(reply.elapsedTime / 1000);
    done();
  });
}
