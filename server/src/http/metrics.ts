import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { dialectOf, type Orm } from '../db/orm.ts';

type Child = { count: () => void; observe: (seconds: number) => void };

/** Prometheus metrics: requests and latency by route template and status, and the database pool. */
export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #duration: Histogram<'method' | 'route' | 'status'>;

  constructor(orm: Orm, databaseUrl: string) {
    const postgres = dialectOf(databaseUrl) === 'postgresql';
    collectDefaultMetrics({ register: this.registry, prefix: 'loupe_' });
    this.#requests = new Counter({
      name: 'loupe_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.#duration = new Histogram({
      name: 'loupe_http_request_duration_seconds',
      help: 'HTTP request latency, by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    new Gauge({
      name: 'loupe_db_pool_connections',
      help: 'Database pool connections by state (PostgreSQL; SQLite reports its single connection as total 1)',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const connection = orm.em.getConnection() as unknown as {
          getNativeClient?: () => Promise<{ totalCount: number; idleCount: number; waitingCount: number }>;
        };
        if (postgres && connection.getNativeClient) {
          try {
            const native = await connection.getNativeClient();
            this.set({ state: 'total' }, native.totalCount);
            this.set({ state: 'idle' }, native.idleCount);
            this.set({ state: 'waiting' }, native.waitingCount);
          } catch {
            // the database is down: leave the last values
          }
        } else {
          this.set({ state: 'total' }, 1);
        }
      },
    });
  }

  // prom-client validates and hashes label objects on every call; the labelled children are kept
  // instead, by method, route template and status (all bounded), with no key built per call.
  readonly #children = new Map<string, Map<string, Map<number, Child>>>();

  /** Counts one answered request and its latency. */
  observe(method: string, route: string, status: number, seconds: number): void {
    let byRoute = this.#children.get(method);
    if (!byRoute) this.#children.set(method, (byRoute = new Map()));
    let byStatus = byRoute.get(route);
    if (!byStatus) byRoute.set(route, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (!child) {
      const counter = this.#requests.labels(method, route, String(status));
      const histogram = this.#duration.labels(method, route, String(status));
      child = { count: () => counter.inc(), observe: (value) => histogram.observe(value) };
      byStatus.set(status, child);
    }
    child.observe(seconds);
    child.count();
  }
}
