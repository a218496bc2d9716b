import type { Metric } from 'prom-client';

/** One sample line as prom-client's registry formats it. */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/** The buckets, sum and count of one series: a bucket search and three adds per observation. */
export class HistogramSeries {
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(private readonly buckets: readonly number[]) {
    this.counts = new Float64Array(buckets.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const buckets = this.buckets;
    for (let index = 0; index < buckets.length; index++) {
      if (value <= buckets[index]) {
        this.counts[index]++;
        return;
      }
    }
  }

  /** The exposition of this series: cumulative buckets, +Inf, sum and count, each with `labels`. */
  samples(name: string, labels: Record<string, string>): Sample[] {
    const values: Sample[] = [];
    let cumulative = 0;
    this.buckets.forEach((bound, index) => {
      cumulative += this.counts[index];
      values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: bound }, value: cumulative });
    });
    values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: this.count });
    values.push({ metricName: `${name}_sum`, labels, value: this.sum });
    values.push({ metricName: `${name}_count`, labels, value: this.count });
    return values;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/**
 * A histogram with one label, counted in plain numbers, for the observation every HTTP request
 * makes: prom-client's own histogram hashes its labels on every observe (about 0.2 µs); here the
 * caller looks its series up once per label value and keeps it. The registry reads it like any
 * metric, through get(). The label's values must be a bounded set (route patterns).
 */
export class PlainHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly buckets: readonly number[],
  ) {}

  /** The series of one label value, made on first use. */
  seriesOf(labelValue: string): HistogramSeries {
    let series = this.series.get(labelValue);
    if (!series) this.series.set(labelValue, (series = new HistogramSeries(this.buckets)));
    return series;
  }

  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] } {
    const values = [...this.series].flatMap(([labelValue, series]) => series.samples(this.name, { [this.labelName]: labelValue }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Zeroes every series in place: callers keep their series. */
  reset(): void {
    for (const series of this.series.values()) series.reset();
  }

  /** For Registry.registerMetric, which is typed for prom-client's own classes but reads only name, get() and reset(). */
  asRegistryMetric(): Metric {
    return this as unknown as Metric;
  }
}
