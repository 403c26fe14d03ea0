import { tooLarge } from './errors.ts';

// Every answer that lists rows holds at most a byte budget of JSON (LOUPE_MAX_RESPONSE_BYTES): a
// stored row may be as large as a request body, so `limit` alone does not bound an answer, and
// building one past the heap kills the process. Sizes come from the database (the stored length
// of each row's columns) before any content is read, so that a row that does not fit is never
// fetched.

/** A row's id and size, as its query's size statement gives them, and what names it in a refusal. */
export type SizedRow = { id: string; name: string; bytes: number | string | bigint };

/** The 413 for a row that no answer may hold (it alone is over the budget). */
export function rowTooLarge(name: string, bytes: number, budget: number) {
  return tooLarge(
    `${name} takes ${bytes} bytes of JSON, more than one answer may hold (${budget} bytes, LOUPE_MAX_RESPONSE_BYTES): it cannot be answered.`,
  );
}

/**
 * How many of a page's first rows, in order, fit within `budget` bytes together (`sizes` holds the
 * candidates, at most the page's limit). The first row always counts: if it alone passes the
 * budget, no page could ever hold it, and the answer is a 413 that names it.
 */
export function rowsThatFit(sizes: readonly SizedRow[], budget: number): number {
  let total = 0;
  for (const [index, row] of sizes.entries()) {
    const bytes = Number(row.bytes);
    if (index === 0 && bytes > budget) throw rowTooLarge(row.name, bytes, budget);
    if (total + bytes > budget) return index;
    total += bytes;
  }
  return sizes.length;
}

/** A page read within the budget: its rows, and whether rows follow it. */
export type BudgetedPage<R> = { rows: R[]; more: boolean };

/**
 * Reads a page of at most `limit` rows whose answer fits in `budget` bytes, in two statements of
 * the same query: `sizes(limit + 1)` gives the id and size of each of the first limit + 1 rows
 * (small: keys and lengths), then `read(count, ids)` fetches the content of the `count` that fit
 * (see pageRows). A page cut short by the budget says that more follow, as one cut by its limit
 * does (contract 5.6 allows a page of fewer rows than `limit` with a next cursor).
 */
export async function budgetedPage<R>(options: {
  limit: number;
  budget: number;
  sizes: (count: number) => Promise<SizedRow[]>;
  read: (count: number, ids: string[]) => Promise<R[]>;
}): Promise<BudgetedPage<R>> {
  const sizes = await options.sizes(options.limit + 1);
  const count = rowsThatFit(sizes.slice(0, options.limit), options.budget);
  const rows = count ? await options.read(count, sizes.slice(0, count).map((row) => row.id)) : [];
  return { rows, more: sizes.length > count };
}

/**
 * The condition that picks a page's rows for its content statement, which reads the first `count`
 * rows of the query (no offset): nothing more from the query's start or a cursor; from an offset,
 * the ids the size statement found, so that the rows before the offset are not counted twice.
 */
export function pageRows(column: string, offset: number, ids: readonly string[]): { sql: string; params: unknown[] } {
  return offset ? { sql: ` and ${column} in (${ids.map(() => '?').join(', ')})`, params: [...ids] } : { sql: '', params: [] };
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
