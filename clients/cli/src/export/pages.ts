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

/** How a page is asked for: the first without a cursor, each next one by the cursor of the page before. */
export type Paging = { cursor?: string };

/** Pages of a query continued by its `next_cursor` (contract 5.6): keyset reads, the same cost at any depth. */
export function pagedBy<T>(run: (paging: Paging) => Promise<Page<T>>) {
  return (cursor: string | undefined): Promise<Page<T>> => run(cursor === undefined ? {} : { cursor });
}
