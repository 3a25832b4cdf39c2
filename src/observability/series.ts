/**
 * Counters and histograms whose series are plain numbers, for the metrics every request
 * touches (observability/metrics.ts). prom-client's `Counter.inc` and `Histogram.observe` check the label
 * names and hash the label set on every call, which cost about 17 µs of a 100 µs REST get
 * (bench/RESULTS.md at bc5cbff, "Metrics on the request path"). Here an observation is one Map lookup by
 * a key the caller builds from its label values, and a few additions.
 *
 * prom-client still serves them: each one is registered in the gateway's registry and answers
 * its `get()` with prom-client's own metric shape (`MetricObjectWithValues`, the values of
 * `getMetricsAsJSON`), so the registry writes the text exposition exactly as it writes its own
 * counters and histograms (test/ops/series.test.ts compares the two).
 */
import type { Metric, Registry } from 'prom-client';

type Labels = Record<string, string>;

/** One sample as prom-client's registry reads it (its `MetricValueWithName`). */
interface Sample {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/** What `get()` answers: prom-client's `MetricObjectWithValues` (the runtime type is the lowercase name). */
interface Collected {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Sample[];
}

interface Series {
  labels: Labels;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); histograms only. */
  buckets: number[];
}

abstract class PlainMetric {
  readonly aggregator = 'sum' as const;
  abstract readonly type: Collected['type'];
  protected readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
  ) {
    // The registry needs only name, help, type, aggregator, get() and reset() of a metric.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `key` (one key per label set, built by the caller); `labels()` names it once. */
  protected at(key: string, labels: () => Labels, buckets: number): Series {
    let s = this.series.get(key);
    if (!s) {
      s = { labels: labels(), count: 0, sum: 0, buckets: new Array<number>(buckets).fill(0) };
      this.series.set(key, s);
    }
    return s;
  }

  reset(): void {
    this.series.clear();
  }

  abstract get(): Promise<Collected>;
}

/** A counter of events per label set. */
export class PlainCounter extends PlainMetric {
  readonly type = 'counter' as const;

  inc(key: string, labels: () => Labels): void {
    this.at(key, labels, 0).count++;
  }

  async get(): Promise<Collected> {
    const values = [...this.series.values()].map((s) => ({ labels: s.labels, value: s.count }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A histogram per label set, with prom-client's bucket rule: a value counts in the first bucket whose bound it does not exceed. */
export class PlainHistogram extends PlainMetric {
  readonly type = 'histogram' as const;

  constructor(name: string, help: string, registry: Registry, private readonly bounds: readonly number[]) {
    super(name, help, registry);
  }

  observe(key: string, labels: () => Labels, value: number): void {
    const s = this.at(key, labels, this.bounds.length);
    s.count++;
    s.sum += value;
    for (let i = 0; i < this.bounds.length; i++) {
      if (value <= this.bounds[i]!) {
        s.buckets[i]!++;
        break;
      }
    }
  }

  async get(): Promise<Collected> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let below = 0;
      this.bounds.forEach((le, i) => {
        below += s.buckets[i]!;
        values.push({ metricName: bucket, labels: { le, ...s.labels }, value: below });
      });
      values.push(
        { metricName: bucket, labels: { le: '+Inf', ...s.labels }, value: s.count },
        { metricName: `${this.name}_sum`, labels: { ...s.labels }, value: s.sum },
        { metricName: `${this.name}_count`, labels: { ...s.labels }, value: s.count },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
