import { sqlRows, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import type { FailureCounts } from './failure-counts.ts';

/** How often a process deletes the rows of ended windows (only while failures are being counted). */
const SWEEP_EVERY_MS = 60_000;

/**
 * Failure counts shared by every server process on one PostgreSQL database: one row per client
 * (table `auth_failures`, migration 0005), counted by one atomic upsert, on the database's clock.
 *
 * Why a table of ours rather than rate-limiter-flexible's RateLimiterPostgres: that store wants to
 * own its table (created at run time, or by us after its undocumented layout), stamps windows with
 * each process's clock, and names prepared statements on the pool; the same upsert here is one
 * statement through the project's SQL helpers, on the pool the server already has, with its table
 * in the migrations. The in-memory side (SQLite) does use a library (lru-cache).
 *
 * Rows of ended windows are deleted by whichever process counts a failure at least a minute after
 * its last sweep, so the table holds only the clients that failed in the last two minutes or so.
 */
export class PostgresFailureCounts implements FailureCounts {
  readonly #sql: SqlScope;
  readonly #windowSeconds: number;
  #lastSweep = -Infinity;

  constructor(sql: SqlScope, windowMs: number) {
    this.#sql = sql;
    this.#windowSeconds = windowMs / 1000;
  }

  async add(client: string): Promise<{ failures: number; secondsLeft: number }> {
    if (performance.now() - this.#lastSweep >= SWEEP_EVERY_MS) {
      this.#lastSweep = performance.now();
      await sqlRun(this.#sql, sql`delete from auth_failures where window_ends <= now()`);
    }
    // A window that has ended is restarted by the failure that finds it.
    const [row] = await sqlRows<{ failures: number; seconds_left: number }>(
      this.#sql,
      sql`insert into auth_failures as f (client, failures, window_ends)
       values (${client}, 1, now() + make_interval(secs => ${this.#windowSeconds}))
       on conflict (client) do update set
         failures = case when f.window_ends <= now() then 1 else f.failures + 1 end,
         window_ends = case when f.window_ends <= now() then excluded.window_ends else f.window_ends end
       returning failures, ceil(extract(epoch from window_ends - now()))::int as seconds_left`,
    );
    return { failures: Number(row!.failures), secondsLeft: Number(row!.seconds_left) };
  }

  async current(client: string): Promise<number> {
    const [row] = await sqlRows<{ failures: number }>(
      this.#sql,
      sql`select failures from auth_failures where client = ${client} and window_ends > now()`,
    );
    return row ? Number(row.failures) : 0;
  }
}
