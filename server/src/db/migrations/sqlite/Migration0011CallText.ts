import { Migration } from '@mikro-orm/migrations';
import { callTextBody } from './call-text.ts';

/**
 * Full-text search over calls (CallFilter.text, contract 5.1): an FTS5 table of each call's string
 * values of inputs and output, filled by a trigger on insert (calls are never updated: a second
 * create of an id is a retry or a 409) and here for the calls stored before it. Contentless: the
 * words are indexed, the text is not kept twice; the project and call id are kept unindexed to
 * find the call (a rowid would change under VACUUM). Case-folded, diacritics kept, as PostgreSQL's
 * 'simple' configuration does; the same first 60,000 characters of each as PostgreSQL indexes.
 */
export class Migration0011CallText extends Migration {
  override up(): void {
    this.addSql(`create virtual table calls_text using fts5(project_id unindexed, call_id unindexed, body,
      content = '', contentless_unindexed = 1, tokenize = 'unicode61 remove_diacritics 0')`);
    this.addSql(`create trigger calls_text_insert after insert on calls begin
      insert into calls_text (project_id, call_id, body) select new.project_id, new.id, body from (select ${callTextBody('new')} as body) where body <> char(10);
    end`);
    this.addSql(`insert into calls_text (project_id, call_id, body)
      select project_id, id, body from (select c.project_id, c.id, ${callTextBody('c')} as body from calls c) where body <> char(10)`);
  }
}
