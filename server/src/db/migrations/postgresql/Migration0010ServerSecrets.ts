import { Migration } from '@mikro-orm/migrations';

/**
 * Secrets the server makes for itself on first start (the key cursors are sealed under, when
 * LOUPE_SECRET is unset), so that every process on the database and every restart share them.
 */
export class Migration0010ServerSecrets extends Migration {
  override up(): void {
    this.addSql(`create table server_secrets (
      name text primary key,
      value text not null,
      created_at timestamptz(3) not null)`);
  }
}
