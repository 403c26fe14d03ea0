import { sqlRows, type Conditions, type SqlScope } from '../db/sql.ts';
import { tooLarge } from './errors.ts';

// Every answer that lists rows holds at most a byte budget of JSON (LOUPE_MAX_RESPONSE_BYTES): a
// stored row may be as large as a request body, so `limit` alone does not bound an answer, and
// building one past the heap kills the process. Sizes come from the database (the stored length
// of each row's columns) before any content is read, so that a row that does not fit is never
// fetched.

/** A row's id and size, as its query's size statement gives them. */
type SizedRow = { id: string; bytes: number | string | bigint };

/** The 413 for a row that no answer may hold (it alone is over the budget). */
export function rowTooLarge(name: string, bytes: number, budget: number) {
  return tooLarge(
    `${name} takes ${bytes} bytes of JSON, more than one answer may hold (${budget} bytes, LOUPE_MAX_RESPONSE_BYTES): it cannot be answered.`,
  );
}

/**
 * How many of a page's first rows, in order, fit within `budget` bytes together (`sizes` holds the
 * candidates, at most the page's limit). The first row always counts: if it alone passes the
 * budget, no page could ever hold it, and the answer is a 413 that names it (`name`).
 */
function rowsThatFit(sizes: readonly SizedRow[], budget: number, name: (id: string) => string): number {
  let total = 0;
  for (const [index, row] of sizes.entries()) {
    const bytes = Number(row.bytes);
    if (index === 0 && bytes > budget) throw rowTooLarge(name(row.id), bytes, budget);
    if (total + bytes > budget) return index;
    total += bytes;
  }
  return sizes.length;
}

/** A page read within the budget: its rows, and whether rows follow it. */
export type BudgetedPage<R> = { rows: R[]; more: boolean };

/** A keyset or offset page of one table, as SQL pieces (see budgetedPage). */
export type PageQuery = {
  db: SqlScope;
  /** The table, with the alias the other pieces use if any: `calls`, `annotation_queue_items i`. */
  from: string;
  /** The column of a row's id, unique within the query's filter: `id`, `i.id`. */
  id: string;
  /** The columns that identify a row in the table: `project_id, id`, `i.id`. */
  key: string;
  where: Conditions;
  /** `order by …` of the query. */
  order: string;
  /** A row's size in bytes, in SQL (see storedBytes). */
  bytes: string;
  /** What a refusal calls the row with this id. */
  name: (id: string) => string;
  limit: number;
  offset: number;
  budget: number;
};

/**
 * Reads a page of at most `limit` rows whose answer fits in `budget` bytes, in two statements: the
 * id and size of each of the page's first limit + 1 rows (small: keys and lengths), then the
 * content of those that fit, by their ids (`read.rows`; the rows come back in the page's order),
 * so that nothing written in between is read unweighed. By id alone, not in the query's order
 * with its filter: PostgreSQL would rather walk the order's index and test every row's id. A page
 * cut short by the budget says that more follow, as one cut by its limit does (contract 5.6
 * allows a page of fewer rows than `limit` with a next cursor).
 */
export async function budgetedPage<R>(query: PageQuery, read: { rows: (ids: string[]) => Promise<R[]>; id: (row: R) => string }): Promise<BudgetedPage<R>> {
  const { db, from, id, key, where, order, bytes } = query;
  const count = query.limit + 1;
  // From an offset, the rows are found by their keys alone first: a size in the select list would
  // be computed for every row the offset skips as well (PostgreSQL measures jsonb as its text).
  const [sql, params] = query.offset
    ? [`select ${id} as id, ${bytes} as bytes from ${from} where (${key}) in (select ${key} from ${from} where ${where.sql} ${order} limit ? offset ?) ${order}`, [...where.params, count, query.offset]]
    : [`select ${id} as id, ${bytes} as bytes from ${from} where ${where.sql} ${order} limit ?`, [...where.params, count]];
  const sizes = await sqlRows<SizedRow>(db, sql, params);
  const fit = rowsThatFit(sizes.slice(0, query.limit), query.budget, query.name);
  const ids = sizes.slice(0, fit).map((row) => row.id);
  const place = new Map(ids.map((rowId, index) => [rowId, index]));
  const rows = fit ? (await read.rows(ids)).sort((a, b) => place.get(read.id(a))! - place.get(read.id(b))!) : [];
  return { rows, more: sizes.length > fit };
}

/**
 * Checks that a whole answer without pages (a list the client narrows by its filters, not pages)
 * fits in the budget, from the total size of its rows: 413 asking for a narrower request if not.
 */
export function requireAnswerFits(what: string, bytes: number | string | bigint | null, budget: number, narrower: string): void {
  const total = Number(bytes ?? 0);
  if (total > budget) {
    throw tooLarge(`The ${what} asked for take ${total} bytes of JSON, more than one answer may hold (${budget} bytes, LOUPE_MAX_RESPONSE_BYTES): ${narrower}.`);
  }
}
