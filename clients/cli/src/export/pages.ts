import { DEFAULT_RETRY, withRetry } from '../retry.ts';

/** One page of a query and the cursor of the next (contract 5.6), `null` after the last. */
export type Page<T> = { rows: T[]; next_cursor: string | null };

/**
 * The rows of a query, page by page. The next page is requested as soon as its cursor is known,
 * so the server reads it while this process writes the current one; at most two pages are held,
 * so memory stays bounded whatever the size of the result. A page is asked again on 429, 503 or
 * no answer (a query changes nothing, and a cursor can be used twice).
 */
export async function* pages<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T[]> {
  const fetchWithRetry = (cursor: string | undefined) => withRetry(() => fetchPage(cursor), DEFAULT_RETRY);
  let next: Promise<Page<T>> | undefined = fetchWithRetry(undefined);
  while (next) {
    const page: Page<T> = await next;
    next = page.next_cursor === null ? undefined : fetchWithRetry(page.next_cursor);
    next?.catch(() => undefined); // awaited on the next turn; not an unhandled rejection meanwhile
    if (page.rows.length) yield page.rows;
  }
}

/** How a page is asked for: the first without either, then by cursor (or by offset, see below). */
export type Paging = { cursor?: string; offset?: number };

/**
 * Pages of a query that answers `next_cursor` (contract 5.6), continued by that cursor. A server
 * from before cursors answers none; its pages are then continued by offset, so the CLI works
 * against both. The token handed on says which (`c:` cursor, `o:` offset).
 */
export function pagedBy<T>(limit: number, run: (paging: Paging) => Promise<{ rows: T[]; next_cursor?: string | null }>) {
  return async (token: string | undefined): Promise<Page<T>> => {
    const paging: Paging = token === undefined ? {} : token.startsWith('c:') ? { cursor: token.slice(2) } : { offset: Number(token.slice(2)) };
    const { rows, next_cursor } = await run(paging);
    if (next_cursor !== undefined) return { rows, next_cursor: next_cursor === null ? null : `c:${next_cursor}` };
    const offset = paging.offset ?? 0;
    return { rows, next_cursor: rows.length === limit ? `o:${offset + limit}` : null };
  };
}

/** `next_cursor` of an answer, when the server gave one. */
export function nextCursorOf(answer: object): string | null | undefined {
  return (answer as { next_cursor?: string | null }).next_cursor;
}
