import { PostgreSqlConnection } from '@mikro-orm/postgresql';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Orm } from '../db/orm.ts';
import { RequestSeries } from './request-series.ts';

/** Prometheus metrics: requests and latency by route template and status, and the database pool. */
export class Metrics {
  readonly registry = new Registry();
  readonly #requests = new RequestSeries(this.registry);

  /**
   * `openEventStreams` reads how many live-event streams this process holds open; `passwordHashes`
   * how many password hashes and verifications it has run.
   */
  constructor(orm: Orm, { openEventStreams = () => 0, passwordHashes = () => 0 }: { openEventStreams?: () => number; passwordHashes?: () => number } = {}) {
    collectDefaultMetrics({ register: this.registry, prefix: 'loupe_' });
    new Gauge({
      name: 'loupe_db_pool_connections',
      help: 'Database pool connections by state (PostgreSQL; SQLite reports its single connection as total 1)',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const connection = orm.em.getConnection();
        if (connection instanceof PostgreSqlConnection) {
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
    new Gauge({
      name: 'loupe_event_streams_open',
      help: 'Live-event streams (annotationQueues.events) open in this process',
      registers: [this.registry],
      collect() {
        this.set(openEventStreams());
      },
    });
    new Counter({
      name: 'loupe_password_hashes_total',
      help: 'Password hashes and verifications run (argon2id; every sign-in by password costs one, an unknown username too)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(passwordHashes());
      },
    });
  }

  /** Counts one answered request and its latency. */
  observe(method: string, route: string, status: number, seconds: number): void {
    this.#requests.observe(method, route, status, seconds);
  }
}
