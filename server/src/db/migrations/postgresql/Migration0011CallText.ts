import { Migration } from '@mikro-orm/migrations';

/**
 * Full-text search over calls (CallFilter.text, contract 5.1): a GIN index on `calls_text_vector`,
 * the text-search vector of the string values of inputs and output ('simple': lower-cased words, no
 * stemming, no stop words). domain/call-filter.ts queries with the same function, so the index
 * answers it.
 *
 * The first 60,000 characters of each are indexed: a tsvector holds at most 1 MB, and one made of
 * a whole large call would make its insert fail (1.3 MB of distinct words does). SQLite's trigger
 * (its Migration0011CallText) indexes the same characters.
 */
export class Migration0011CallText extends Migration {
  override up(): void {
    this.addSql(`create function calls_text_vector(inputs jsonb, output jsonb) returns tsvector
      language sql immutable parallel safe as $$
      select to_tsvector('simple', left(coalesce((select string_agg(s #>> '{}', ' ') from jsonb_path_query(inputs, 'strict $.** ? (@.type() == "string")') s), ''), 60000))
          || to_tsvector('simple', left(coalesce((select string_agg(s #>> '{}', ' ') from jsonb_path_query(output, 'strict $.** ? (@.type() == "string")') s), ''), 60000))
      $$`);
    this.addSql(`create index calls_text_idx on calls using gin (calls_text_vector(inputs, output))`);
  }
}
