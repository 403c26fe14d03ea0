import { Migration } from '@mikro-orm/migrations';
import { callTextBody } from './call-text.ts';

/**
 * Indexes that keep a filtered page of calls (CallFilter, contract 5.1) from reading the whole
 * project (server/src/db/README.md lists which condition each serves):
 *
 * - Full text: `calls_text` is remade keyed by the call's rowid, and holds nothing else. The calls
 *   query tests a call with `rowid in (select rowid from calls_text where calls_text match …)`: the
 *   matching rowids come from FTS5's doclist alone, and each call of the page walk is tested with
 *   the rowid its index entries carry. Keyed by (project_id, call_id) as before, every match's key
 *   was read from the FTS table's content (10,000 matches: 270 ms on a loaded machine, against
 *   30 ms for their rowids). A rowid is stable here: calls are never updated or deleted, and
 *   VACUUM keeps the rowids of a table that has indexes (test/src/db/call-text-migration.test.ts
 *   checks it); a migration that rebuilds `calls` must copy each rowid.
 * - `calls_op_name_idx` gains (started_at, id): a page of one op name is read in order and stops
 *   at its limit, instead of sorting every call of that name.
 * - `calls_exception_idx` (project_id, started_at, id) of the calls with an exception (partial):
 *   `has_exception: true` reads them in order, however rare.
 */
export class Migration0013CallFilterIndexes extends Migration {
  override up(): void {
    this.addSql(`drop trigger calls_text_insert`);
    this.addSql(`drop table calls_text`);
    this.addSql(`create virtual table calls_text using fts5(body, content = '', tokenize = 'unicode61 remove_diacritics 0')`);
    this.addSql(`create trigger calls_text_insert after insert on calls begin
      insert into calls_text (rowid, body) select new.rowid, body from (select ${callTextBody('new')} as body) where body <> char(10);
    end`);
    this.addSql(`insert into calls_text (rowid, body)
      select rowid, body from (select c.rowid as rowid, ${callTextBody('c')} as body from calls c) where body <> char(10)`);
    this.addSql(`drop index calls_op_name_idx`);
    this.addSql(`create index calls_op_name_idx on calls (project_id, op_name, started_at, id)`);
    this.addSql(`create index calls_exception_idx on calls (project_id, started_at, id) where exception is not null`);
  }
}
