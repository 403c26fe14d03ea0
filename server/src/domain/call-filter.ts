import type { AttributeCondition, CallFilter } from '@loupe/shared';
import { inList, onPostgres, sqlDate, sqlRows, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';

/**
 * `textAfterRowid` (SQLite): the calls to test are among those whose text-index rows come after
 * this rowid: the calls a write has just stored (their rows are the newest, rowids ascend). The
 * text condition then reads only those rows of the index, rather than every call of the database
 * with the words (queue rules test each new call of a write).
 */
export type CallFilterOptions = { textAfterRowid?: number };

/**
 * A CallFilter (contract 5.1) as conditions on the `calls` table, one per condition given, each
 * value a bound parameter: the calls query joins them with `and`, and queue rules (5.10) can too.
 * The filter has been validated by its zod schema (bounded lists, text and paths).
 */
export function callFilterConditions(db: SqlScope, filter: CallFilter, { textAfterRowid }: CallFilterOptions = {}): Statement[] {
  const postgres = onPostgres(db);
  const where = [
    ...inList('id', filter.call_ids),
    ...inList('op_name', filter.op_names),
    ...inList('trace_id', filter.trace_ids),
    ...inList('parent_id', filter.parent_ids),
  ];
  if (filter.root_only === true) where.push(sql`parent_id is null`);
  // strpos/instr rather than like: a `%` or `_` in the name is a character, not a wildcard.
  // SQLite's lower() folds ASCII letters only.
  if (filter.op_name_contains !== undefined) where.push(sql`${sql.raw(postgres ? 'strpos' : 'instr')}(lower(op_name), ${filter.op_name_contains.toLowerCase()}) > 0`);
  if (filter.started_after !== undefined) where.push(sql`started_at >= ${sqlDate(db, new Date(filter.started_after))}`);
  if (filter.started_before !== undefined) where.push(sql`started_at < ${sqlDate(db, new Date(filter.started_before))}`);
  if (filter.has_exception !== undefined) where.push(filter.has_exception ? sql`exception is not null` : sql`exception is null`);
  where.push(...jsonConditions(db, 'attributes', filter.attributes));
  // Last: the costliest per row (PostgreSQL computes the call's text vector), so that a queue rule's
  // flag (CASE WHEN, read left to right) skips it when a cheaper condition fails.
  if (filter.text !== undefined) where.push(postgres ? postgresText(filter.text) : sqliteText(filter.text, textAfterRowid));
  return where;
}

/**
 * Attribute conditions on a JSON column of the code's own: a call's `attributes`, or a feedback
 * record's `payload` (queue rules, 5.10), one semantics for both.
 */
export function jsonConditions(db: SqlScope, column: string, conditions: readonly AttributeCondition[] | undefined): Statement[] {
  const postgres = onPostgres(db);
  return (conditions ?? []).map((condition) => (postgres ? postgresAttribute(column, condition) : sqliteAttribute(column, condition)));
}

/**
 * The `calls` table to find a filtered page's keys in. PostgreSQL plans with statistics and picks
 * the index itself. SQLite has none (the server never runs ANALYZE): it takes each equality on an
 * index for a few rows, so it would rather walk the project in the page's order than sort, and
 * read the whole project to find three call ids. The conditions on ids name few calls, and their
 * index is named here: call ids the primary key, trace ids (with root_only or parent ids)
 * `calls_trace_parent_idx`, parent ids `calls_parent_idx`, several op names `calls_op_name_idx`.
 * A text whose words few calls of the database hold (FEW_TEXT_MATCHES) reads those calls by rowid
 * and sorts them (`not indexed` leaves SQLite the rowid only), rather than walk the project for
 * them; a text of more matches walks the project in order, testing each call's rowid against
 * them, and stops when the page is full. Other conditions keep SQLite's choice
 * (server/src/db/README.md).
 */
export async function callFilterTable(db: SqlScope, filter: CallFilter): Promise<Statement> {
  if (onPostgres(db)) return sql`calls`;
  const index =
    filter.call_ids !== undefined ? 'sqlite_autoindex_calls_1'
    : filter.trace_ids !== undefined ? 'calls_trace_parent_idx'
    : filter.parent_ids !== undefined ? 'calls_parent_idx'
    : (filter.op_names?.length ?? 0) > 1 ? 'calls_op_name_idx'
    : undefined;
  if (index !== undefined) return sql`calls indexed by ${sql.raw(index)}`;
  if (filter.text !== undefined && (await fewTextMatches(db, filter.text))) return sql`calls not indexed`;
  return sql`calls`;
}

/** Matches of a text in the whole database under which SQLite reads them by rowid: a few milliseconds of lookups and sort. */
const FEW_TEXT_MATCHES = 2000;

/** Whether at most FEW_TEXT_MATCHES calls of the database hold the text's words: counted in FTS5's doclists, stopping past that. */
async function fewTextMatches(db: SqlScope, text: string): Promise<boolean> {
  const [found] = await sqlRows<{ n: number }>(
    db,
    sql`select count(*) as n from (select 1 from calls_text where calls_text match ${sqliteMatch(text)} limit ${FEW_TEXT_MATCHES + 1})`,
  );
  return Number(found?.n ?? 0) <= FEW_TEXT_MATCHES;
}

/**
 * PostgreSQL: `text_vector`, each call's stored text-search vector, which the GIN index
 * `calls_text_idx` is on (Migration0016CallFilterIndexes). plainto_tsquery reads the text as words
 * only (no operators) and requires all of them.
 */
function postgresText(text: string): Statement {
  return sql`text_vector @@ plainto_tsquery('simple', ${text})`;
}

/**
 * SQLite: the FTS5 table `calls_text` (Migration0016CallFilterIndexes) holds each call's string
 * values under the call's rowid: the matches are rowids read from the index alone, and a call is
 * tested by the rowid its index entries carry. Each whitespace-separated piece of the text becomes one quoted FTS5
 * string (a phrase of its words, `"` doubled), so nothing of the input is FTS5 syntax: `OR`,
 * `NEAR`, `*` and `"` are searched as text. Pieces without a letter or digit are dropped.
 */
function sqliteText(text: string, afterRowid: number | undefined): Statement {
  if (afterRowid !== undefined) return sql`calls.rowid in (select rowid from calls_text where calls_text match ${sqliteMatch(text)} and rowid > ${afterRowid})`;
  return sql`calls.rowid in (select rowid from calls_text where calls_text match ${sqliteMatch(text)})`;
}

/** The FTS5 query of a text: each whitespace-separated piece with a letter or digit, one quoted string. */
function sqliteMatch(text: string): string {
  return text
    .split(/\s+/)
    .filter((piece) => /[\p{L}\p{N}]/u.test(piece))
    .map((piece) => `"${piece.replaceAll('"', '""')}"`)
    .join(' ');
}

/** `["gen_ai", "request", "model"]` of `gen_ai.request.model`. */
function pathSegments(path: string): string[] {
  return path.split('.');
}

function postgresAttribute(column: string, { path, op, value }: AttributeCondition): Statement {
  const at = sql`(${sql.raw(column)} #> ${pathSegments(path)}::text[])`;
  const json = JSON.stringify(value ?? null);
  switch (op) {
    case 'eq':
      return sql`coalesce(${at} = ${json}::jsonb, false)`;
    case 'neq':
      return sql`not coalesce(${at} = ${json}::jsonb, false)`;
    case 'exists':
      return sql`${at} is not null`;
    case 'not_exists':
      return sql`${at} is null`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      // jsonb orders two numbers by their value; the type test keeps strings and others out.
      return ofType('number', at, sql`${at} ${sql.raw(COMPARISON[op])} ${json}::jsonb`);
    case 'contains':
      return ofType('string', at, sql`strpos(${at} #>> '{}', ${String(value)}) > 0`);
  }
}

/**
 * `test` where the value at the path is of that JSON type, else false. A CASE, not `and`: the
 * planner has no statistics for `jsonb_typeof(…) = 'number'` and takes it for 1 call in 200,
 * so a page with such a condition was planned as a sequential scan of the whole table and a sort
 * (reading every call to find a page of calls most of which matched); a CASE it takes for one
 * in two, and walks the project in the page's order (server/src/db/README.md).
 */
function ofType(type: 'number' | 'string', at: Statement, test: Statement): Statement {
  return sql`(case when jsonb_typeof(${at}) = ${type} then ${test} else false end)`;
}

const COMPARISON = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** SQLite's JSON path of `a.b`: `$."a"."b"` (segments are identifiers, see ATTRIBUTE_PATH, so no quote inside). */
function sqlitePath(path: string): string {
  return `$${pathSegments(path).map((segment) => `."${segment}"`).join('')}`;
}

function sqliteAttribute(column: string, { path, op, value }: AttributeCondition): Statement {
  const jsonPath = sqlitePath(path);
  const type = sql`json_type(${sql.raw(column)}, ${jsonPath})`;
  const at = sql`json_extract(${sql.raw(column)}, ${jsonPath})`;
  // Each JSON function call reads the document again (a preview of 20 conditions over 100,000
  // calls is 40 calls per row). The value is compared first and its type checked only when the
  // comparison holds: CASE WHEN stops at the first false term, so a condition that fails costs one
  // call. json_extract alone cannot tell `true` from 1, a string from an object's text, or order a
  // string against a number (SQLite puts text above numbers), hence the type after it.
  switch (op) {
    case 'eq':
      return sqliteEquals(type, at, value!);
    case 'neq':
      return sql`(case when ${sqliteEqualsTerms(type, at, value!)} then 0 else 1 end)`;
    case 'exists':
      return sql`${type} is not null`;
    case 'not_exists':
      return sql`${type} is null`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return sql`(case when ${at} ${sql.raw(COMPARISON[op])} ${value} and ${type} in ('integer', 'real') then 1 else 0 end)`;
    case 'contains':
      return sql`(case when instr(${at}, ${String(value)}) > 0 and ${type} = 'text' then 1 else 0 end)`;
  }
}

/** The same JSON type and value, 1 or 0: json_extract alone gives 1 for `true` and for `1`. */
function sqliteEquals(type: Statement, at: Statement, value: string | number | boolean): Statement {
  return sql`(case when ${sqliteEqualsTerms(type, at, value)} then 1 else 0 end)`;
}

function sqliteEqualsTerms(type: Statement, at: Statement, value: string | number | boolean): Statement {
  if (typeof value === 'boolean') return sql`${type} = ${value ? 'true' : 'false'}`;
  if (typeof value === 'number') return sql`${at} = ${value} and ${type} in ('integer', 'real')`;
  return sql`${at} = ${value} and ${type} = 'text'`;
}
