import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FastCounter, FastHistogram } from '../../src/ops/fast-metrics.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const COUNTER = { name: 'demo_requests_total', help: 'Requests, by route, method and status.', labelNames: ['route', 'method', 'status'] as const };
const HISTOGRAM = { name: 'demo_duration_seconds', help: 'Latency "quoted" \\ and\nmultiline help.', labelNames: ['route', 'method'] as const, buckets: BUCKETS };

/** The same metrics twice: prom-client's own classes in one registry, the fast ones in another. */
function pair() {
  const reference = new Registry();
  const fast = new Registry();
  return {
    reference,
    fast,
    refCounter: new Counter({ ...COUNTER, registers: [reference] }),
    refHistogram: new Histogram({ ...HISTOGRAM, registers: [reference] }),
    fastCounter: new FastCounter({ ...COUNTER, registers: [fast] }),
    fastHistogram: new FastHistogram({ ...HISTOGRAM, registers: [fast] }),
  };
}

// Every bound itself (a value on a bound belongs to that bucket), just above and below bounds, zero,
// above the last bound, and sums whose float rounding depends on the order of additions.
const VALUES = [0, 0.001, 0.0010000001, 0.0025, 0.1 + 0.2, 0.3, 120, 120.5, 1e6, 0.0049999, ...BUCKETS, ...BUCKETS.map((b) => b * 1.01), 0.7, 0.1];
const ROUTES = ['/v1/embeddings', '/v1/models/:id', '(unmatched)', 'a "quoted" \\ route\nwith a newline'];
const METHODS = ['POST', 'GET', 'HEAD'];
const STATUSES = ['200', '404', '429', '500'];

describe('FastCounter and FastHistogram', () => {
  it('print exactly what prom-client prints for the same observations, series in first-observed order', async () => {
    const m = pair();
    const held = new Map<string, ReturnType<typeof m.fastHistogram.series>>();
    for (let i = 0; i < 400; i++) {
      const route = ROUTES[(i * 7) % ROUTES.length]!;
      const method = METHODS[(i * 5) % METHODS.length]!;
      const status = STATUSES[(i * 3) % STATUSES.length]!;
      const value = VALUES[i % VALUES.length]!;
      m.refCounter.inc({ route, method, status });
      m.refHistogram.observe({ route, method }, value);
      // Half through held series, half through the label-object calls: both land in one series.
      if (i % 2 === 0) {
        m.fastCounter.inc({ route, method, status });
        m.fastHistogram.observe({ route, method }, value);
      } else {
        m.fastCounter.series({ route, method, status }).inc();
        const key = `${route} ${method}`;
        if (!held.has(key)) held.set(key, m.fastHistogram.series({ route, method }));
        held.get(key)!.observe(value);
      }
    }
    m.refCounter.inc({ route: '/v1/embeddings', method: 'POST', status: '200' }, 2.5);
    m.fastCounter.inc({ route: '/v1/embeddings', method: 'POST', status: '200' }, 2.5);
    const text = await m.fast.metrics();
    expect(text).toBe(await m.reference.metrics());
    expect(text).toContain('demo_duration_seconds_bucket{le="0.001",route="/v1/embeddings",method="POST"}');
    expect(await m.fast.getMetricsAsJSON()).toEqual(await m.reference.getMetricsAsJSON());
  });

  it('sum fractional amounts (money in currency units) to the same float as prom-client, and refuse what it refuses', async () => {
    const reference = new Registry();
    const fast = new Registry();
    const config = { name: 'demo_money_total', help: 'Money, by model. In currency units.', labelNames: ['model'] as const };
    const ref = new Counter({ ...config, registers: [reference] });
    const mine = new FastCounter({ ...config, registers: [fast] });
    for (let i = 1; i <= 300; i++) {
      const model = i % 3 === 0 ? 'text-embedding-3-small' : 'gpt-4o-mini';
      ref.inc({ model }, (i * 37) / 1_000_000);
      mine.series({ model }).inc((i * 37) / 1_000_000);
    }
    expect(await fast.metrics()).toBe(await reference.metrics());
    const s = mine.series({ model: 'x' });
    for (const bad of [-1, Number.POSITIVE_INFINITY]) {
      expect(() => ref.inc({ model: 'x' }, bad)).toThrow();
      expect(() => s.inc(bad)).toThrow();
    }
  });

  it('count a value exactly on a bound in that bucket, and one above the last bound only in +Inf', async () => {
    const m = pair();
    const s = m.fastHistogram.series({ route: '/r', method: 'GET' });
    s.observe(0.005);
    s.observe(120);
    s.observe(121);
    const text = await m.fast.metrics();
    expect(text).toContain('demo_duration_seconds_bucket{le="0.0025",route="/r",method="GET"} 0\n');
    expect(text).toContain('demo_duration_seconds_bucket{le="0.005",route="/r",method="GET"} 1\n');
    expect(text).toContain('demo_duration_seconds_bucket{le="60",route="/r",method="GET"} 1\n');
    expect(text).toContain('demo_duration_seconds_bucket{le="120",route="/r",method="GET"} 2\n');
    expect(text).toContain('demo_duration_seconds_bucket{le="+Inf",route="/r",method="GET"} 3\n');
    expect(text).toContain('demo_duration_seconds_count{route="/r",method="GET"} 3\n');
    expect(text).toContain('demo_duration_seconds_sum{route="/r",method="GET"} 241.005\n');
  });

  it('print the help and type of a metric with no series yet, as prom-client does', async () => {
    const m = pair();
    expect(await m.fast.metrics()).toBe(await m.reference.metrics());
  });

  it('hand out one series per label set, and refuse missing, extra or non-string labels', () => {
    const { fastCounter, fastHistogram } = pair();
    expect(fastCounter.series({ route: '/a', method: 'GET', status: '200' })).toBe(fastCounter.series({ status: '200', method: 'GET', route: '/a' }));
    expect(() => fastCounter.series({ route: '/a', method: 'GET' } as never)).toThrow(/labels must be exactly route, method, status/);
    expect(() => fastHistogram.series({ route: '/a', method: 'GET', status: '200' } as never)).toThrow(/labels must be exactly/);
    expect(() => fastCounter.series({ route: '/a', method: 'GET', status: 200 } as never)).toThrow(/strings/);
    expect(() => fastHistogram.series({ route: '/a', method: 'GET' }).observe(Number.NaN)).toThrow(TypeError);
  });

  it('refuse a second metric of the same name in one registry', () => {
    const registry = new Registry();
    new FastCounter({ ...COUNTER, registers: [registry] });
    expect(() => new Counter({ ...COUNTER, registers: [registry] })).toThrow(/already been registered/);
  });

  it('zero held series on a registry reset, and keep counting into them', async () => {
    const m = pair();
    const c = m.fastCounter.series({ route: '/a', method: 'GET', status: '200' });
    const h = m.fastHistogram.series({ route: '/a', method: 'GET' });
    c.inc();
    h.observe(0.2);
    m.fast.resetMetrics();
    c.inc();
    h.observe(0.003);
    const text = await m.fast.metrics();
    expect(text).toContain('demo_requests_total{route="/a",method="GET",status="200"} 1\n');
    expect(text).toContain('demo_duration_seconds_bucket{le="0.25",route="/a",method="GET"} 1\n');
    expect(text).toContain('demo_duration_seconds_sum{route="/a",method="GET"} 0.003\n');
  });
});
