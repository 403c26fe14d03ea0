// The bytes of an export, the same in the CLI (a file or stdout) and the web app (a download):
// JSON Lines, or CSV (RFC 4180) that is safe to open in a spreadsheet.

export type ExportFormat = 'jsonl' | 'csv';

const utf8 = new TextEncoder();

/**
 * Pages as JSON Lines, each row encoded straight into one buffer: a page built as one string (a
 * rope of rows) is flattened, then encoded, on its way out, which took longer than writing the
 * JSON itself (3.1 against 1.8 µs a record). The buffer is the encoder's, kept from page to page,
 * and each page leaves as a copy of its bytes: a new buffer of the bound (3 bytes a UTF-16 unit)
 * for every page was three times the page in new external memory, which V8 counts towards the old
 * generation's limit (the CLI's export ran a full collection every 4 pages of 2,000, now every 6).
 */
function jsonLines(): (rows: readonly Record<string, unknown>[]) => Uint8Array<ArrayBuffer> {
  let buffer = new Uint8Array(0);
  return (rows) => {
    let at = 0;
    for (const row of rows) {
      const line = JSON.stringify(row);
      const bound = at + line.length * 3 + 1; // at most 3 bytes of UTF-8 per UTF-16 unit, and \n
      if (bound > buffer.length) {
        const grown = new Uint8Array(Math.max(bound, 2 * buffer.length));
        grown.set(buffer.subarray(0, at));
        buffer = grown;
      }
      at += utf8.encodeInto(line, buffer.subarray(at)).written;
      buffer[at++] = 0x0a;
    }
    return buffer.slice(0, at);
  };
}

/**
 * Text that a spreadsheet would run as a formula (CSV injection) starts with one of these, or with
 * their full-width forms (Apple Numbers folds those): such a cell gets a leading `'` (OWASP's
 * advice), so that it shows as text. `-` only for text: a negative number is no formula.
 */
const FORMULA_START = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV cell: strings and numbers as they are, null as empty, objects and arrays as JSON. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  let text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Rows as CSV lines (`\n` ends each) with the given columns, in their order. */
export function csvLines(columns: readonly string[], rows: readonly Record<string, unknown>[]): Uint8Array<ArrayBuffer> {
  let text = '';
  for (const row of rows) text += `${columns.map((column) => csvCell(row[column])).join(',')}\n`;
  return utf8.encode(text);
}

/** The CSV header line: the column names, guarded like any other cell (a username is text from people). */
export function csvHeader(columns: readonly string[]): Uint8Array<ArrayBuffer> {
  return utf8.encode(`${columns.map(csvCell).join(',')}\n`);
}

/** How one export's pages become bytes: the header first (CSV only), then each page. */
export type Encoder = { header: Uint8Array<ArrayBuffer> | null; page(rows: readonly Record<string, unknown>[]): Uint8Array<ArrayBuffer> };

export function encoder(format: ExportFormat, columns: readonly string[]): Encoder {
  return format === 'csv' ? { header: csvHeader(columns), page: (rows) => csvLines(columns, rows) } : { header: null, page: jsonLines() };
}
