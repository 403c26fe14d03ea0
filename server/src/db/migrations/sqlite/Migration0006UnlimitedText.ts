import { Migration } from '@mikro-orm/migrations';

/**
 * Nothing to change: these columns were always `text` on SQLite. PostgreSQL's migration of the
 * same name drops the length limits it alone had.
 */
export class Migration0006UnlimitedText extends Migration {
  override up(): void {}
}
