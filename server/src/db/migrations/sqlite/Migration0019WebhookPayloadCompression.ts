import { Migration } from '@mikro-orm/migrations';

/** PostgreSQL compresses webhook payloads from here on (see its 0019); SQLite stores them as before. */
export class Migration0019WebhookPayloadCompression extends Migration {
  override up(): void {}
}
