import { Migration } from '@mikro-orm/migrations';

/** The failed-authentication brake's counts, shared by every server process (see auth/brake-postgres.ts). */
export class Migration0005AuthFailures extends Migration {
  override up(): void {
    this.addSql(`create table auth_failures (
      client text primary key,
      failures integer not null,
      window_ends timestamptz not null)`);
    this.addSql(`create index auth_failures_window_ends_idx on auth_failures (window_ends)`);
  }
}
