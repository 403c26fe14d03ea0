/** One page of a query and the cursor of the next (contract 5.6), `null` after the last. */
export type Page<T> = { rows: T[]; next_cursor: string | null };

/**
 * The rows of a query, page by page: only one page is held at a time, so memory stays bounded
 * whatever the size of the result.
 */
export async function* pages<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T[]> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    if (page.rows.length) yield page.rows;
    if (page.next_cursor === null) return;
    cursor = page.next_cursor;
  }
}
