import { Migration } from '@mikro-orm/migrations';

/**
 * Nothing to create: on SQLite (one server process) the failed-authentication brake counts in
 * memory. Kept so that both dialects' histories name the same migrations.
 */
export class Migration0005AuthFailures extends Migration {
  override up(): void {}
}
