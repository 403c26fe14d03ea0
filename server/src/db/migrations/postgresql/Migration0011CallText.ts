import { Migration } from '@mikro-orm/migrations';

/**
 * Full-text search over calls (CallFilter.text, contract 5.1): a GIN index on the text-search
 * vector of the string values of inputs and output ('simple': lower-cased words, no stemming, no
 * stop words). domain/call-filter.ts queries with the same expression, so the index answers it.
 */
export class Migration0011CallText extends Migration {
  override up(): void {
    this.addSql(`create index calls_text_idx on calls using gin ((
      jsonb_to_tsvector('simple', coalesce(inputs, 'null'::jsonb), '["string"]') || jsonb_to_tsvector('simple', coalesce(output, 'null'::jsonb), '["string"]')))`);
  }
}
