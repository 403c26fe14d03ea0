import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { Statement } from './statement.ts';
import type { StatementReader } from './statement-reader.ts';

/** Statements a reader keeps prepared, at most, and the longest it keeps. */
const CACHED = 16;
const CACHEABLE_SQL_LENGTH = 16 * 1024;

/**
 * A read-only connection of its own to the SQLite file at `path`, beside the server's one (WAL:
 * it reads what has committed while the server writes). An 8 MiB page cache: it reads one
 * request's rows. Its statements are kept while it is open (a reader serves one request).
 */
export function openSqliteReader(path: string): StatementReader & { close(): void } {
  const db = new DatabaseSync(path, { readOnly: true });
  db.exec('pragma busy_timeout = 5000; pragma cache_size = -8192');
  const params = (values: readonly unknown[]) => values as SQLInputValue[];
  // The statements a read repeats (a chunk's, a page of items'), up to CACHED; a list of ids of
  // another length each time is prepared for its one use.
  const prepared = new Map<string, StatementSync>();
  const prepare = (statement: Statement, arrays: boolean) => {
    const text = statement.text('sqlite');
    const key = `${arrays ? 'a' : 'o'}${text}`;
    let stmt = prepared.get(key);
    if (!stmt) {
      stmt = db.prepare(text);
      stmt.setReturnArrays(arrays);
      if (prepared.size < CACHED && text.length <= CACHEABLE_SQL_LENGTH) prepared.set(key, stmt);
    }
    return stmt;
  };
  const reader: StatementReader & { close(): void } = {
    dialect: 'sqlite',
    rows: async <T>(statement: Statement) => prepare(statement, false).all(...params(statement.params)) as T[],
    arrays: async (statement) => prepare(statement, true).all(...params(statement.params)) as unknown as unknown[][],
    readOnly: (work) => work(reader),
    close: () => db.close(),
  };
  return reader;
}
