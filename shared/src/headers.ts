/**
 * Sent with a typed-door query's answer that names a next page (contract 5.6): that page's cursor,
 * the same as the body's `next_cursor`. Headers arrive before the body, so a client paging through a
 * result can ask for the next page while it still reads this one. Absent on the last page, and for
 * cursors longer than a header should carry (the body always has it).
 */
export const NEXT_CURSOR_HEADER = 'Loupe-Next-Cursor';
