import type { Statement } from './statement.ts';

/**
 * What a read of many rows needs of a database, whoever holds the connection: the server's ORM
 * (sql.ts's scopeReader) or a worker thread on a connection of its own (sqlite-reader.ts,
 * postgres-reader.ts, which load no ORM and no Kysely: a thread starts in a fraction of the time).
 */
export interface StatementReader {
  readonly dialect: 'sqlite' | 'postgresql';
  /** The rows of a read, with named columns. */
  rows<T>(statement: Statement): Promise<T[]>;
  /** The rows of a read as arrays of values in the select list's order (no object per row). */
  arrays(statement: Statement): Promise<unknown[][]>;
  /** PostgreSQL: `work` in a read-only transaction on one connection (where a cursor lives). */
  readOnly<T>(work: (tx: StatementReader) => Promise<T>): Promise<T>;
}
