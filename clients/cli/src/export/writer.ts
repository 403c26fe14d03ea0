import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { stringify, type Stringifier } from 'csv-stringify';

export type Format = 'jsonl' | 'csv';

/** Writes rows as JSON Lines or CSV to a file or stdout, waiting whenever the output is full. */
export type RowWriter = {
  /** Writes one page of rows (JSON Lines: one write per page, not per row). */
  write(rows: readonly Record<string, unknown>[]): Promise<void>;
  close(): Promise<void>;
};

function openOutput(path: string | undefined): Writable {
  return path ? createWriteStream(path) : process.stdout;
}

async function writeChunk(out: Writable, chunk: string | Record<string, unknown>): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

/** A CSV cell: strings and numbers as they are, null as empty, objects and arrays as JSON. */
function cell(value: unknown): unknown {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return value;
}

/** `columns` fixes the CSV header and order; JSON Lines writes each row as it is. */
export function openWriter(format: Format, path: string | undefined, columns: string[]): RowWriter {
  const out = openOutput(path);
  const finished = path ? once(out, 'finish') : Promise.resolve();
  if (format === 'jsonl') {
    return {
      write: (rows) => {
        let text = '';
        for (const row of rows) text += `${JSON.stringify(row)}\n`;
        return writeChunk(out, text);
      },
      async close() {
        if (path) {
          out.end();
          await finished;
        }
      },
    };
  }
  const csv: Stringifier = stringify({ header: true, columns, cast: { boolean: (b) => String(b) } });
  csv.pipe(out, { end: Boolean(path) });
  return {
    async write(rows) {
      for (const row of rows) {
        const record: Record<string, unknown> = {};
        for (const column of columns) record[column] = cell(row[column]);
        await writeChunk(csv, record);
      }
    },
    async close() {
      const ended = once(csv, 'end');
      csv.end();
      await ended;
      if (path) await finished;
    },
  };
}
