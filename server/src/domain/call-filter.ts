import type { AttributeCondition, CallFilter } from '@loupe/shared';
import { inList, onPostgres, sqlDate, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';

/**
 * A CallFilter (contract 5.1) as conditions on the `calls` table, one per condition given, each
 * value a bound parameter: the calls query joins them with `and`, and queue rules (5.10) can too.
 * The filter has been validated by its zod schema (bounded lists, text and paths).
 */
export function callFilterConditions(db: SqlScope, filter: CallFilter): Statement[] {
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
  if (filter.text !== undefined) where.push(postgres ? postgresText(filter.text) : sqliteText(filter.text));
  for (const condition of filter.attributes ?? []) where.push(postgres ? postgresAttribute(condition) : sqliteAttribute(condition));
  return where;
}

/**
 * PostgreSQL: `text_vector`, each call's stored text-search vector, which the GIN index
 * `calls_text_idx` is on (Migration0013CallFilterIndexes). plainto_tsquery reads the text as words
 * only (no operators) and requires all of them.
 */
function postgresText(text: string): Statement {
  return sql`text_vector @@ plainto_tsquery('simple', ${text})`;
}

/**
 * SQLite: the FTS5 table `calls_text` (Migration0013CallFilterIndexes) holds each call's string
 * values under the call's rowid: the matches are rowids read from the index alone, and a call is
 * tested by the rowid its index entries carry. Each whitespace-separated piece of the text becomes one quoted FTS5
 * string (a phrase of its words, `"` doubled), so nothing of the input is FTS5 syntax: `OR`,
 * `NEAR`, `*` and `"` are searched as text. Pieces without a letter or digit are dropped.
 */
function sqliteText(text: string): Statement {
  const match = text
    .split(/\s+/)
    .filter((piece) => /[\p{L}\p{N}]/u.test(piece))
    .map((piece) => `"${piece.replaceAll('"', '""')}"`)
    .join(' ');
  return sql`calls.rowid in (select rowid from calls_text where calls_text match ${match})`;
}

/** `["gen_ai", "request", "model"]` of `gen_ai.request.model`. */
function pathSegments(path: string): string[] {
  return path.split('.');
}

function postgresAttribute({ path, op, value }: AttributeCondition): Statement {
  const at = sql`(attributes #> ${pathSegments(path)}::text[])`;
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
      return sql`(jsonb_typeof(${at}) = 'number' and ${at} ${sql.raw(COMPARISON[op])} ${json}::jsonb)`;
    case 'contains':
      return sql`(jsonb_typeof(${at}) = 'string' and strpos(${at} #>> '{}', ${String(value)}) > 0)`;
  }
}

const COMPARISON = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** SQLite's JSON path of `a.b`: `$."a"."b"` (segments are identifiers, see ATTRIBUTE_PATH, so no quote inside). */
function sqlitePath(path: string): string {
  return `$${pathSegments(path).map((segment) => `."${segment}"`).join('')}`;
}

function sqliteAttribute({ path, op, value }: AttributeCondition): Statement {
  const jsonPath = sqlitePath(path);
  const type = sql`json_type(attributes, ${jsonPath})`;
  const at = sql`json_extract(attributes, ${jsonPath})`;
  switch (op) {
    case 'eq':
      return sqliteEquals(type, at, value!);
    case 'neq':
      return sql`not coalesce(${sqliteEquals(type, at, value!)}, 0)`;
    case 'exists':
      return sql`${type} is not null`;
    case 'not_exists':
      return sql`${type} is null`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return sql`(${type} in ('integer', 'real') and ${at} ${sql.raw(COMPARISON[op])} ${value})`;
    case 'contains':
      return sql`(${type} = 'text' and instr(${at}, ${String(value)}) > 0)`;
  }
}

/** The same JSON type and value: json_extract alone gives 1 for `true` and for `1`. */
function sqliteEquals(type: Statement, at: Statement, value: string | number | boolean): Statement {
  if (typeof value === 'boolean') return sql`coalesce(${type} = ${value ? 'true' : 'false'}, 0)`;
  if (typeof value === 'number') return sql`coalesce(${type} in ('integer', 'real') and ${at} = ${value}, 0)`;
  return sql`coalesce(${type} = 'text' and ${at} = ${value}, 0)`;
}
