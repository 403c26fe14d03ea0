import type { AnswerRoom, BudgetedPage } from './answer-budget.ts';
import type { CursorSeal } from './cursor.ts';
import { invalid } from './errors.ts';

export type Paging = { limit?: number | undefined; offset?: number | undefined; cursor?: string | undefined };

/** What the server allows a page: its most rows and bytes, the seal of its cursors, the heap it may take. */
export type PageLimits = { queryLimit: number; responseBytes: number; seal: CursorSeal; room: AnswerRoom };

/**
 * A page to read: `limit` rows from `offset`, or after `cursor` (never both), whose answer holds at
 * most `bytes` of JSON (answer-budget.ts) and takes its heap through `room`; `seal` makes and
 * checks its cursors.
 */
export type Page = { limit: number; offset: number; cursor: string | undefined; bytes: number; seal: CursorSeal; room: AnswerRoom };

export const DEFAULT_LIMIT = 100;

/** Resolves a query's limit, offset and cursor against the server's limits. */
export function resolvePaging(paging: Paging, limits: PageLimits): Page {
  const limit = paging.limit ?? DEFAULT_LIMIT;
  const maxLimit = limits.queryLimit;
  if (limit > maxLimit) throw invalid(`limit must be at most ${maxLimit}.`);
  if (paging.cursor !== undefined && paging.offset !== undefined) {
    throw invalid('cursor and offset cannot be used together: a cursor already says where its page starts.');
  }
  return { limit, offset: paging.offset ?? 0, cursor: paging.cursor, bytes: limits.responseBytes, seal: limits.seal, room: limits.room };
}

/** A page of rows and the cursor of the page after it (null at the end). */
export type CursorPage<T> = { rows: T[]; nextCursor: string | null };

/**
 * The next cursor of a page read within its budget (answer-budget.ts): after its last row when more
 * rows follow, so that the last page says so (`null`) instead of leading to an empty one.
 */
export function nextCursorOf<R>(page: BudgetedPage<R>, cursorAfter: (row: R) => string): string | null {
  const last = page.rows.at(-1);
  return page.more && last !== undefined ? cursorAfter(last) : null;
}

/** A page read within its budget as a cursor page. */
export function cursorPage<R>(page: BudgetedPage<R>, cursorAfter: (row: R) => string): CursorPage<R> {
  return { rows: page.rows, nextCursor: nextCursorOf(page, cursorAfter) };
}
