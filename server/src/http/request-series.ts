import { Counter, Histogram, type Registry } from 'prom-client';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LABELS = ['method', 'route', 'status'] as const;
type Label = (typeof LABELS)[number];

type Series = { labels: Record<Label, string>; count: number; duration: Histogram.Internal<Label> };

/**
 * Request counts and latency by method, route template and status. prom-client validates and
 * hashes the labels on every observation, even through a labelled child (measured: ~0.5 µs for
 * a counter child's inc, ~1.2 µs for a histogram child's observe). So each
 * (method, route, status), found through three maps, keeps its histogram child and its count,
 * which the counter takes when /metrics is read. Model list, server CPU per request (200 / 304,
 * shared machine): ~59 / ~51 µs when both metrics counted in plain maps, ~64 / ~56 µs now.
 */
export class RequestSeries {
  readonly #series = new Map<string, Map<string, Map<number, Series>>>();
  readonly #duration: Histogram<Label>;

  constructor(registry: Registry) {
    const series = this.#series;
    new Counter({
      name: 'loupe_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: LABELS,
      registers: [registry],
      collect() {
        this.reset();
        for (const byRoute of series.values()) {
          for (const byStatus of byRoute.values()) for (const s of byStatus.values()) this.inc(s.labels, s.count);
        }
      },
    });
    this.#duration = new Histogram({
      name: 'loupe_http_request_duration_seconds',
      help: 'HTTP request latency, by method, route template and status',
      labelNames: LABELS,
      buckets: BUCKETS,
      registers: [registry],
    });
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let byRoute = this.#series.get(method);
    if (!byRoute) this.#series.set(method, (byRoute = new Map()));
    let byStatus = byRoute.get(route);
    if (!byStatus) byRoute.set(route, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = { labels, count: 0, duration: this.#duration.labels(labels) };
      byStatus.set(status, series);
    }
    series.count++;
    series.duration.observe(seconds);
  }
}
