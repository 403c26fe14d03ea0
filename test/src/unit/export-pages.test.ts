import { describe, expect, it } from 'vitest';
import type { CursorListener } from '../../../clients/cli/src/cursor-hints.ts';
import { pages, type Page } from '../../../clients/src/export/pages.ts';

// The CLI's paging of an export (clients/src/export/pages.ts, used by the CLI and the web app): the order of requests against a
// result of five pages whose answers are settled by the test, with and without cursor hints.

/** A paged result whose answers the test settles, one request at a time, with a log of what was asked. */
function pagedResult(count: number) {
  const asked: (string | undefined)[] = [];
  const open = new Map<string | undefined, (page: Page<number>) => void>();
  let hint: CursorListener | undefined;
  const cursorOf = (index: number) => (index + 1 < count ? `c${index + 1}` : null);
  return {
    asked,
    fetchPage: (cursor: string | undefined) => {
      asked.push(cursor);
      return new Promise<Page<number>>((resolve) => open.set(cursor, resolve));
    },
    announced: (listener: CursorListener) => {
      hint = listener;
      return () => (hint = undefined);
    },
    /** The head of page `index`'s answer arrives: its hint, if anyone listens. */
    head(index: number) {
      const next = cursorOf(index);
      if (next) hint?.(next);
    },
    /** A hint from an answer that is not one of these pages. */
    stray: (cursor: string) => hint?.(cursor),
    /** Page `index`'s answer is read. */
    settle(index: number) {
      const cursor = index === 0 ? undefined : `c${index}`;
      open.get(cursor)!({ rows: [index], next_cursor: cursorOf(index) });
      open.delete(cursor);
    },
    listening: () => hint !== undefined,
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('export pages', () => {
  it('asks for each page once its cursor is read, one request at a time, without hints', async () => {
    const result = pagedResult(5);
    const rows: number[] = [];
    const reading = (async () => {
      for await (const page of pages(result.fetchPage)) rows.push(...page);
    })();
    for (let index = 0; index < 5; index++) {
      await turn();
      expect(result.asked).toHaveLength(index + 1);
      result.head(index); // no listener: changes nothing
      await turn();
      expect(result.asked).toHaveLength(index + 1);
      result.settle(index);
    }
    await reading;
    expect(rows).toEqual([0, 1, 2, 3, 4]);
    expect(result.asked).toEqual([undefined, 'c1', 'c2', 'c3', 'c4']);
  });

  it('asks for the next page when a hint arrives, at most one page beyond the one awaited, each page once', async () => {
    const result = pagedResult(5);
    const rows: number[] = [];
    let release!: () => void;
    const writing = new Promise<void>((resolve) => (release = resolve));
    const reading = (async () => {
      for await (const page of pages(result.fetchPage, result.announced)) {
        rows.push(...page);
        if (page[0] === 1) await writing; // a slow write of page 1
      }
    })();
    await turn();
    expect(result.asked).toEqual([undefined]);
    // Page 0's head: page 1 is asked for before page 0 is read.
    result.head(0);
    expect(result.asked).toEqual([undefined, 'c1']);
    result.settle(0);
    await turn();
    expect(rows).toEqual([0]);
    // Page 1's head and its body; the write of page 1 is slow.
    result.head(1);
    expect(result.asked).toEqual([undefined, 'c1', 'c2']);
    result.settle(1);
    await turn();
    expect(rows).toEqual([0, 1]);
    // Page 2 arrives during the write: page 3 is asked for (one beyond page 2, the next awaited)...
    result.head(2);
    result.settle(2);
    await turn();
    expect(result.asked).toEqual([undefined, 'c1', 'c2', 'c3']);
    // ...and page 3's hint during the same write asks for nothing more: three pages are held.
    result.head(3);
    await turn();
    expect(result.asked).toEqual([undefined, 'c1', 'c2', 'c3']);
    release();
    await turn();
    // Page 3's hint was not taken: page 4 is asked for once page 3 is read.
    result.settle(3);
    await turn();
    expect(result.asked).toEqual([undefined, 'c1', 'c2', 'c3', 'c4']);
    result.head(4);
    result.settle(4);
    await reading;
    expect(rows).toEqual([0, 1, 2, 3, 4]);
    expect(result.listening()).toBe(false);
  });

  it('asks for the page a cursor names when the hint taken was for another', async () => {
    const result = pagedResult(2);
    const rows: number[] = [];
    const reading = (async () => {
      for await (const page of pages(result.fetchPage, result.announced)) rows.push(...page);
    })();
    await turn();
    result.stray('elsewhere');
    result.settle(0);
    await turn();
    expect(result.asked).toEqual([undefined, 'elsewhere', 'c1']);
    result.settle(1);
    await reading;
    expect(rows).toEqual([0, 1]);
  });
});
