import type { CursorSeal } from './cursor.ts';
import { invalid } from './errors.ts';

export type Paging = { limit?: number | undefined; offset?: number | undefined; cursor?: string | undefined };
/** A page to read: `limit` rows from `offset`, or after `cursor` (never both); `seal` makes and checks cursors. */
export type Page = { limit: number; offset: number; cursor: string | undefined; seal: CursorSeal };

export const DEFAULT_LIMIT = 100;

/** Resolves a query's limit, offset and cursor against the server's maximum. */
export function resolvePaging(paging: Paging, maxLimit: number, seal: CursorSeal): Page {
  const limit = paging.limit ?? DEFAULT_LIMIT;
  if (limit > maxLimit) throw invalid(`limit must be at most ${maxLimit}.`);
  if (paging.cursor !== undefined && paging.offset !== undefined) {
    throw invalid('cursor and offset cannot be used together: a cursor already says where its page starts.');
  }
  return { limit, offset: paging.offset ?? 0, cursor: paging.cursor, seal };
}

/** A page of rows and the cursor of the page after it (null at the end). */
export type CursorPage<T> = { rows: T[]; nextCursor: string | null };

/**
 * The page out of `limit + 1` rows read: the extra row only tells that another page exists, so
 * that the last page says so (`next_cursor: null`) instead of leading to an empty one.
 */
export function pageOf<R>(rows: R[], limit: number, cursorAfter: (row: R) => string): CursorPage<R> {
  if (rows.length <= limit) return { rows, nextCursor: null };
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: cursorAfter(page.at(-1)!) };
}
