import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes that keep a filtered page of calls (CallFilter, contract 5.1) from reading the whole
 * project (server/src/db/README.md lists which condition each serves):
 *
 * - Full text: each call's text-search vector is stored (`text_vector`, generated from
 *   calls_text_vector, positions stripped: the search needs words only) and the GIN index
 *   `calls_text_idx` is on it. With the vector only in an expression index, a page that walks the
 *   (project_id, started_at, id) index in order — the planner's choice for a word many calls hold,
 *   and after a cursor — computed the vector of every call it passed (80 µs each: a second for a
 *   page of a word in 1 call in 100); testing a stored vector costs a microsecond or so, and the
 *   planner weighs that walk against the index's matches with the word's statistics.
 * - `calls_op_name_idx` gains (started_at, id): a page of one op name is read in order and stops
 *   at its limit, instead of sorting every call of that name.
 * - `calls_exception_idx` (project_id, started_at, id) of the calls with an exception (partial):
 *   `has_exception: true` reads them in order, however rare.
 */
export class Migration0013CallFilterIndexes extends Migration {
  override up(): void {
    this.addSql(`drop index calls_text_idx`);
    this.addSql(`alter table calls add column text_vector tsvector generated always as (strip(calls_text_vector(inputs, output))) stored`);
    this.addSql(`create index calls_text_idx on calls using gin (text_vector)`);
    this.addSql(`drop index calls_op_name_idx`);
    this.addSql(`create index calls_op_name_idx on calls (project_id, op_name, started_at, id)`);
    this.addSql(`create index calls_exception_idx on calls (project_id, started_at, id) where exception is not null`);
  }
}
