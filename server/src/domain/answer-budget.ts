import { onPostgres, sqliteArrays, sqlRows, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { bodyWeight, measureJsonText } from './json-shape.ts';
import { DomainError, tooLarge } from './errors.ts';

// Every answer that lists rows holds at most a byte budget of JSON (LOUPE_MAX_RESPONSE_BYTES): a
// stored row may be as large as a request body, so `limit` alone does not bound an answer, and
// building one past the heap kills the process. Sizes come from the database (the stored length
// of each row's columns) before any content is read, so that a row that does not fit is never
// fetched; each fetched row's JSON is weighed again, before it is parsed, for what parsing costs.

/**
 * Holds heap for an answer of `bytes` of JSON (its text, parsed rows and serialised answer) until
 * the answer is sent, within the budget request bodies share: false when no room came in time.
 */
export type AnswerRoom = (bytes: number) => Promise<boolean>;

/** A row's id and size, as its query's size statement gives them. */
type SizedRow = { id: string; bytes: number | string | bigint };

/**
 * The ids and sizes a statement selects. On SQLite as arrays of values, made into rows here: rows
 * with named properties from the driver took a page of 2,000 feedback records 2 ms longer (1 µs a
 * row, a seventh of the query).
 */
async function sizedRows(db: SqlScope, statement: Statement): Promise<SizedRow[]> {
  if (onPostgres(db)) return sqlRows<SizedRow>(db, statement);
  return (await sqliteArrays(db, statement)).map(([id, bytes]) => ({ id: id as string, bytes: bytes as number }));
}

/** The 503 for an answer that found no room in the heap the server shares between bodies and answers. */
export function answersBusy(): DomainError {
  return new DomainError('unavailable', 'The server is holding as many large requests and answers as it can; retry shortly.', 1);
}

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
  from: Statement;
  /** The column of a row's id, unique within the query's filter: `id`, `i.id`. */
  id: Statement;
  /** The columns that identify a row in the table: `project_id, id`, `i.id`. */
  key: Statement;
  /** The query's filter: its conditions joined by `and`. */
  where: Statement;
  /** The ORDER BY terms of the query (see keysetOrder). */
  order: Statement;
  /** A row's size in bytes (see storedBytes). */
  bytes: Statement;
  /** What a refusal calls the row with this id. */
  name: (id: string) => string;
  limit: number;
  offset: number;
  /**
   * Find the page's rows by their keys alone first, from this table (`from` with an index hint,
   * on SQLite), then weigh them, as from an offset: for a filter whose matches are gathered and
   * sorted, the size in the select list would otherwise be computed for every match before the
   * sort (SQLite's sorter holds whole result rows, and PostgreSQL computes the target list below
   * the sort).
   */
  keysFrom?: Statement;
  /** Holds heap for the answer (see AnswerRoom). */
  room: AnswerRoom;
  budget: number;
};

/**
 * How a page's content is read: `rows` fetches the rows with these ids (in any order), `id` names
 * a fetched row, `density` gives the bytes its JSON costs beyond its length (see jsonDensity),
 * `convert` makes its answer.
 */
export type PageRead<W, R> = {
  rows: (ids: string[]) => Promise<W[]>;
  id: (row: W) => string;
  density: (row: W) => number;
  convert: (row: W) => R;
};

/**
 * Reads a page of at most `limit` rows whose answer fits in `budget` bytes, in two statements: the
 * id and size of each of the page's first limit + 1 rows (small: keys and lengths), then the
 * content of those that fit, by their ids, so that nothing written in between is read unweighed.
 * By id alone, not in the query's order with its filter: PostgreSQL would rather walk the order's
 * index and test every row's id. Each row's JSON is weighed again before it is parsed (its
 * density), and the page ends before a row that would pass the budget then. A page cut short by
 * the budget says that more follow, as one cut by its limit does (contract 5.6 allows a page of
 * fewer rows than `limit` with a next cursor).
 */
export async function budgetedPage<W, R>(query: PageQuery, read: PageRead<W, R>): Promise<BudgetedPage<R>> {
  const { db, from, id, key, where, order, bytes } = query;
  const count = query.limit + 1;
  // From an offset, the rows are found by their keys alone first: a size in the select list would
  // be computed for every row the offset skips as well (PostgreSQL measures jsonb as its text);
  // likewise for every row a sort takes in (keysFrom).
  const statement = query.offset || query.keysFrom
    ? sql`select ${id} as id, ${bytes} as bytes from ${from}
           where (${key}) in (select ${key} from ${query.keysFrom ?? from} where ${where} order by ${order} limit ${count} offset ${query.offset}) order by ${order}`
    : sql`select ${id} as id, ${bytes} as bytes from ${from} where ${where} order by ${order} limit ${count}`;
  const sizes = await sizedRows(db, statement);
  const fit = rowsThatFit(sizes.slice(0, query.limit), query.budget, query.name);
  if (!fit) return { rows: [], more: sizes.length > 0 };
  // Heap for what is about to be read, shared with the other answers and bodies in flight.
  if (!(await query.room(sizes.slice(0, fit).reduce((sum, size) => sum + Number(size.bytes), 0)))) throw answersBusy();
  const fetched = inPageOrder(await read.rows(sizes.slice(0, fit).map((row) => row.id)), read.id);
  const rows: R[] = [];
  let total = 0;
  for (const size of sizes.slice(0, fit)) {
    const row = fetched(size.id);
    if (!row) continue; // deleted since it was weighed
    const weight = Number(size.bytes) + read.density(row);
    if (!rows.length && weight > query.budget) throw rowTooLarge(query.name(size.id), weight, query.budget);
    if (total + weight > query.budget) return { rows, more: true };
    total += weight;
    rows.push(read.convert(row));
  }
  return { rows, more: sizes.length > fit };
}

/**
 * The fetched row of each id, asked for in the page's order. Rows come back in their key's order,
 * which is the page's when ids ascend with it (UUIDv7s, the CLI's derived ids): they are then
 * taken in step, and looked up by id only once the orders part (a map of a page's 2,000 ids took
 * 0.3–0.5 µs a row, 4 % of the query).
 */
function inPageOrder<W>(fetched: readonly W[], idOf: (row: W) => string): (id: string) => W | undefined {
  let next = 0;
  let byId: Map<string, W> | undefined;
  return (id) => {
    const row = fetched[next];
    if (!byId && row !== undefined && idOf(row) === id) {
      next++;
      return row;
    }
    byId ??= new Map(fetched.map((each) => [idOf(each), each]));
    return byId.get(id);
  };
}

/**
 * What a JSON text costs in the heap beyond its length, in bytes of the budget: parsed, each
 * object or array takes far more than its two characters (`[[],[],…]` is 3 bytes of text per
 * array, each array ~60 bytes of heap, and output validation may copy it), each value a little
 * more. Weighed as a request body is (json-shape.ts), a quarter of it since the budget counts
 * bytes of text, so that an answer weighs as the body that stored it.
 */
export function jsonDensity(text: string | null): number {
  if (text === null) return 0;
  // The weight's length term cancels out here, so the text's own length serves as well as its bytes'.
  return bodyWeight(text.length, measureJsonText(text)) / 4 - text.length;
}

/**
 * Checks that a whole answer without pages (a list the client narrows by its filters, not pages)
 * fits in the budget, from the total size of its rows: 413 asking for a narrower request if not.
 */
export function requireAnswerFits({ what, bytes, budget, narrower }: { what: string; bytes: number | string | bigint | null; budget: number; narrower: string }): void {
  const total = Number(bytes ?? 0);
  if (total > budget) {
    throw tooLarge(`The ${what} asked for take ${total} bytes of JSON, more than one answer may hold (${budget} bytes, LOUPE_MAX_RESPONSE_BYTES): ${narrower}.`);
  }
}
