import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook payloads stored compressed with lz4 (contract 5.13's outbox). A feedback.created event of
 * 1,000 records is about 200 KB of JSON: stored as written, each one put 218 KB into the
 * write-ahead log inside the feedback's transaction; lz4, far cheaper than PostgreSQL's default
 * pglz (which 0015 avoided for its cost), stores it in about a tenth of that. A server built
 * without lz4 refuses the setting (feature_not_supported): its payloads stay uncompressed.
 */
export class Migration0019WebhookPayloadCompression extends Migration {
  override up(): void {
    this.addSql(`do $$ begin
      alter table webhook_events alter column data set storage extended, alter column data set compression lz4;
    exception when feature_not_supported then null;
    end $$`);
  }
}
