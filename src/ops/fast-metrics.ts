import type { Metric, Registry } from 'prom-client';

/**
 * A counter and a histogram for the per-request metrics, exposed through the same prom-client
 * registry as every other metric and rendered by it, so /metrics reads exactly as it would with
 * prom-client's own Counter and Histogram (test/ops/fast-metrics.test.ts compares the text).
 *
 * Why not prom-client's classes on the request path: their labelled children still check the label
 * object against the label names and build a hash string of it on every inc() and observe(). Here a
 * caller resolves a series once (`series(labels)`: checked and hashed then) and keeps it; recording
 * is then a field increment (counter) or a short bucket scan and three increments (histogram).
 *
 * A series is listed from the moment it is first resolved, so callers resolve it when they first
 * record into it: the series then appear in the order they were first observed, as with prom-client.
 */

interface FastMetricConfig<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

type Labels<L extends string> = Readonly<Record<L, string>>;

/** One labelled series of a counter. */
export class CounterSeries {
  value = 0;
  constructor(readonly labels: Readonly<Record<string, string>>) {}

  /** The same refusals as prom-client's inc(): a negative or infinite amount throws. */
  inc(by = 1): void {
    if (by < 0) throw new Error('It is not possible to decrease a counter');
    if (by && !Number.isFinite(by)) throw new TypeError(`Value is not a valid number: ${by}`);
    this.value += by;
  }
}

/** One labelled series of a histogram: per-bucket counts (not cumulative), sum and count. */
export class HistogramSeries {
  /** counts[i]: observations in (bounds[i-1], bounds[i]]; above the last bound only `count` moves, as in prom-client. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

/** What every exported sample looks like to the registry (prom-client's MetricValue, with the fields registry.js reads). */
interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
  sharedLabels?: Record<string, string>;
  exemplar?: null;
}

/** Name, help, labels, the series by their label values, and registration: shared by both kinds. */
abstract class FastMetric<L extends string, S extends { labels: Readonly<Record<string, string>> }> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum' as const;
  abstract readonly type: 'counter' | 'histogram';
  private readonly labelNames: readonly L[];
  protected readonly byKey = new Map<string, S>();

  constructor(config: FastMetricConfig<L>) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    // The registry needs only name, help, type, aggregator, get() (or getForPromString()) and reset()
    // (prom-client's registry.js); its type names its own classes, hence the cast.
    for (const r of config.registers) r.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, made (and listed) on first use. Hold on to it. */
  series(labels: Labels<L>): S {
    const values = this.labelNames.map((n) => labels[n]);
    const key = JSON.stringify(values);
    let s = this.byKey.get(key);
    if (!s) {
      if (values.some((v) => typeof v !== 'string') || Object.keys(labels).length !== values.length)
        throw new Error(`${this.name}: labels must be exactly ${this.labelNames.join(', ')} (strings), got ${JSON.stringify(labels)}`);
      // Keys in label-name order: that is the order the registry prints them in.
      const own = Object.fromEntries(this.labelNames.map((n, i) => [n, values[i]!]));
      s = this.create(Object.freeze(own));
      this.byKey.set(key, s);
    }
    return s;
  }

  protected abstract create(labels: Readonly<Record<string, string>>): S;
}

export class FastCounter<L extends string> extends FastMetric<L, CounterSeries> {
  readonly type = 'counter' as const;

  /** For rare paths: resolves the series on every call. Hot paths hold the series instead. */
  inc(labels: Labels<L>, by = 1): void {
    this.series(labels).inc(by);
  }

  protected create(labels: Readonly<Record<string, string>>): CounterSeries {
    return new CounterSeries(labels);
  }

  async get(): Promise<{ name: string; help: string; type: 'counter'; aggregator: 'sum'; values: Sample[] }> {
    const values: Sample[] = [];
    for (const s of this.byKey.values()) values.push({ value: s.value, labels: { ...s.labels } });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Zeroes every series in place (callers hold them), where prom-client would drop them. */
  reset(): void {
    for (const s of this.byKey.values()) s.value = 0;
  }
}

export class FastHistogram<L extends string> extends FastMetric<L, HistogramSeries> {
  readonly type = 'histogram' as const;
  private readonly bounds: readonly number[];

  constructor(config: FastMetricConfig<L> & { buckets: readonly number[] }) {
    super(config);
    this.bounds = Object.freeze([...config.buckets]);
  }

  /** For rare paths: resolves the series on every call. Hot paths hold the series instead. */
  observe(labels: Labels<L>, value: number): void {
    this.series(labels).observe(value);
  }

  protected create(labels: Readonly<Record<string, string>>): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }

  /**
   * The samples as prom-client's Histogram hands them to the text format: `le` as the sample's own
   * label and the series labels as shared ones, so `le` prints first; buckets cumulative, then
   * +Inf, sum and count.
   */
  async getForPromString(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] }> {
    const bucket = `${this.name}_bucket`;
    const values: Sample[] = [];
    for (const s of this.byKey.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: s.labels, value: cumulative, metricName: bucket, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The same samples with the series labels folded into each sample's labels (prom-client's get()). */
  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] }> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return data;
  }

  /** Zeroes every series in place (callers hold them), where prom-client would drop them. */
  reset(): void {
    for (const s of this.byKey.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
