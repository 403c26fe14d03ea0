/** One page of a query and the cursor of the next (contract 5.6), `null` after the last. */
export type Page<T> = { rows: T[]; next_cursor: string | null };

/** Told the next page's cursor as soon as the server announces it (the CLI's cursor hints). */
export type CursorListener = (cursor: string) => void;

/** How a failed request is tried again: the CLI backs off on 429, 503 and no answer; a page need not. */
export type Retry = <T>(call: () => Promise<T>) => Promise<T>;

const once: Retry = (call) => call();

/**
 * The rows of a query, page by page. The next page is requested as soon as its cursor is known,
 * so the server reads it while the caller writes the current one. With `announced` (the server's
 * cursor hints for this query), that is when the current page's answer starts to arrive, so the
 * server also reads it while the caller parses the current one; at most one page is asked for
 * beyond the one awaited, so at most three pages are held and memory stays bounded whatever the
 * size of the result. `retry` runs each page's request (a query changes nothing, and a cursor can
 * be used twice).
 */
export async function* pages<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  announced?: (listener: CursorListener) => () => void,
  retry: Retry = once,
): AsyncGenerator<T[]> {
  const fetchWithRetry = (cursor: string | undefined) => {
    const page = retry(() => fetchPage(cursor));
    page.catch(() => undefined); // awaited on a later turn; not an unhandled rejection meanwhile
    return page;
  };
  let ahead: { cursor: string; page: Promise<Page<T>> } | undefined;
  const stop = announced?.((cursor) => {
    if (!ahead) ahead = { cursor, page: fetchWithRetry(cursor) };
  });
  try {
    let next: Promise<Page<T>> | undefined = fetchWithRetry(undefined);
    while (next) {
      const page: Page<T> = await next;
      const cursor = page.next_cursor;
      next = cursor === null ? undefined : ahead?.cursor === cursor ? ahead.page : fetchWithRetry(cursor);
      // A hint not taken (an answer asked again) is dropped: hints follow the pages from here.
      ahead = undefined;
      if (page.rows.length) yield page.rows;
    }
  } finally {
    stop?.();
  }
}

/** How a page is asked for: the first without a cursor, each next one by the cursor of the page before. */
export type Paging = { cursor?: string };

/** Pages of a query continued by its `next_cursor` (contract 5.6): keyset reads, the same cost at any depth. */
export function pagedBy<T>(run: (paging: Paging) => Promise<Page<T>>) {
  return (cursor: string | undefined): Promise<Page<T>> => run(cursor === undefined ? {} : { cursor });
}
