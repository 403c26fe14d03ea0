import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import {
  CompiledQuery,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type SqliteDatabase,
  type SqliteDialectConfig,
  type SqliteStatement,
} from 'kysely';
import { TransactionSafeDriver } from './transaction-safe-driver.ts';

const READER = /^\s*(select|pragma|explain|with)\b/i;
const RETURNING = /\breturning\b/i;
const STATEMENT_CACHE_SIZE = 256;
/** Statements longer than this are one-offs (values written into the text): not worth keeping. */
const CACHEABLE_SQL_LENGTH = 64 * 1024;

/** The one connection, as Kysely's driver calls it (and sql.ts inside a held connection). */
export type LoupeSqliteDatabase = SqliteDatabase & {
  inTransaction(): boolean;
  /** A read whose rows come as arrays of values in the select list's order (sql.ts's sqliteArrays). */
  arrays(sql: string): { all(params: readonly unknown[]): unknown[][] };
};

/** The most recently used prepared statements by their SQL, up to STATEMENT_CACHE_SIZE. */
class StatementCache<T> {
  readonly #entries = new Map<string, T>();

  get(sql: string, prepare: () => T): T {
    let entry = this.#entries.get(sql);
    if (entry) {
      this.#entries.delete(sql); // re-inserted below: the Map's order is the recency order
    } else {
      entry = prepare();
      if (sql.length > CACHEABLE_SQL_LENGTH) return entry;
      if (this.#entries.size >= STATEMENT_CACHE_SIZE) this.#entries.delete(this.#entries.keys().next().value!);
    }
    this.#entries.set(sql, entry);
    return entry;
  }

  clear(): void {
    this.#entries.clear();
  }
}

// Kysely hands over parameters as unknown values; they are the values this project binds (text,
// numbers, bigints, null, bytes), which node:sqlite checks again as it binds them.
function wrap(stmt: StatementSync, reader: boolean): SqliteStatement {
  return {
    reader,
    all: (params) => stmt.all(...(params as SQLInputValue[])),
    run: (params) => stmt.run(...(params as SQLInputValue[])),
    iterate: (params) => stmt.iterate(...(params as SQLInputValue[])),
  };
}

/**
 * How every transaction begins. A deferred `begin` takes the write lock only at the first write;
 * if another connection (the admin tool, say) holds it then, a transaction that has already read
 * cannot wait for it (SQLite answers SQLITE_BUSY at once, since waiting could not keep its
 * snapshot valid). `begin immediate` takes the write lock first, waiting up to busy_timeout.
 * Nothing here opens a read-only transaction, so no transaction is left deferred.
 */
export const BEGIN = 'begin immediate';

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(BEGIN));
  }
}

/**
 * Kysely dialect over the built-in `node:sqlite` (no native addon to install). Like MikroORM's own
 * NodeSqliteDialect, plus what a server needs: WAL, a busy timeout, transactions that begin
 * immediate, and a cache of prepared statements (preparing is a large share of a small query's
 * cost).
 */
export class LoupeSqliteDialect extends SqliteDialect {
  /** Set once Kysely has opened the connection. */
  database: LoupeSqliteDatabase | undefined;
  /** The database file (`:memory:` for none). */
  readonly path: string;
  readonly #config: SqliteDialectConfig;

  override createDriver(): Driver {
    return new TransactionSafeDriver(new ImmediateSqliteDriver(this.#config));
  }

  constructor(path: string) {
    const config: SqliteDialectConfig = {
      database: async () => {
        if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
        const db = new DatabaseSync(path);
        // A 32 MiB page cache (SQLite's default is 2 MiB) keeps index pages of a growing database warm.
        db.exec('pragma journal_mode = wal; pragma synchronous = normal; pragma busy_timeout = 5000; pragma foreign_keys = on; pragma cache_size = -32768');
        // Recently used statements, wrapped once in the shape Kysely's driver calls; those that
        // return arrays apart (the mode is the statement's own).
        const cache = new StatementCache<SqliteStatement>();
        const arrayCache = new StatementCache<{ all(params: readonly unknown[]): unknown[][] }>();
        const database: LoupeSqliteDatabase = {
          prepare: (sql: string) => cache.get(sql, () => wrap(db.prepare(sql), READER.test(sql) || RETURNING.test(sql))),
          arrays: (sql: string) =>
            arrayCache.get(sql, () => {
              const stmt = db.prepare(sql);
              stmt.setReturnArrays(true);
              return { all: (params) => stmt.all(...(params as SQLInputValue[])) as unknown as unknown[][] };
            }),
          inTransaction: () => db.isTransaction,
          close() {
            cache.clear();
            arrayCache.clear();
            db.close();
          },
        };
        this.database = database;
        return database;
      },
    };
    super(config);
    this.#config = config;
    this.path = path;
  }
}
