import type { Platform } from '@mikro-orm/core';
import { MikroKyselyPlugin, SqlitePlatform, type SqlEntityManager } from '@mikro-orm/sql';
import { CompiledQuery, type Kysely, type KyselyPlugin } from 'kysely';
import type { LoupeDatabase } from './entities.ts';
import { LoupeSqliteDialect, type LoupeSqliteDatabase } from './sqlite-dialect.ts';
import { SqliteGroupCommit } from './sqlite-group-commit.ts';
import type { PostgresConnection } from './postgres-reader.ts';
import type { StatementReader } from './statement-reader.ts';
import { sql, Statement } from './statement.ts';

// Which way to reach the database for which work (unit of work, typed Kysely, the sql template):
// db/README.md.
//
// Hand-written SQL goes through Kysely with bound parameters, not through em.execute(), which
// writes the values into the SQL text: that would make every statement unique (nothing for the
// databases to reuse, a statement cache that holds megabytes of values) and makes text such as
// U+0000 break the statement. Kysely on the em follows the em's transaction.

/**
 * What hand-written SQL runs on: an entity manager (the ORM's global one, or a unit of work's
 * transaction), or the transaction `sqlTransaction` hands its work.
 */
export type SqlScope = {
  getKysely(): Kysely<any>;
  getPlatform(): Platform;
  /** Set inside a SQLite `sqlTransaction`: the connection it holds, which runs every statement directly. */
  readonly heldSqlite?: LoupeSqliteDatabase;
};

/** The plugin of typed Kysely per ORM (by its platform): converts values as the entities declare them. */
const typedPlugins = new WeakMap<Platform, KyselyPlugin>();

/** Makes typedKysely work on every scope of the ORM of `em` (openDatabase calls it). */
export function enableTypedKysely(em: SqlEntityManager): void {
  typedPlugins.set(em.getPlatform(), new MikroKyselyPlugin(em, { convertValues: true }));
}

/**
 * Kysely typed from the entities, on the scope's connection or transaction. Values are converted
 * as the entities declare them, both ways: a Date is bound as the database stores it, and a
 * column selected by its name comes back as a Date or parsed JSON on both databases. A computed
 * column (an aggregate, an alias, a cast) is not converted: type it with `$castTo`, or read it
 * with the `sql` template.
 */
export function typedKysely(db: SqlScope): Kysely<LoupeDatabase> {
  const plugin = typedPlugins.get(db.getPlatform());
  if (!plugin) throw new Error('typedKysely: the ORM was not opened by openDatabase');
  return (db.getKysely() as Kysely<LoupeDatabase>).withPlugin(plugin);
}

/** Runs a query and returns its rows. */
export async function sqlRows<T>(db: SqlScope, statement: Statement): Promise<T[]> {
  const held = db.heldSqlite;
  if (held) return held.prepare(statement.text('sqlite')).all(statement.params) as T[];
  const result = await db.getKysely().executeQuery(CompiledQuery.raw(statement.text(dialectOf(db)), statement.params as unknown[]));
  return result.rows as T[];
}

/**
 * Runs a read on SQLite and returns its rows as arrays of values in the select list's order:
 * node:sqlite builds them several times faster than rows with named properties (a page of 2,000
 * feedback records, payloads parsed and times converted into response objects: 5.4 ms, against
 * 8–14 ms for the same page built as one JSON array by SQLite and parsed). Outside a transaction
 * the connection is taken from Kysely first, so that no other statement runs meanwhile.
 */
export async function sqliteArrays(db: SqlScope, statement: Statement): Promise<unknown[][]> {
  const sql = statement.text('sqlite');
  const params = statement.params;
  const held = db.heldSqlite;
  if (held) return held.arrays(sql).all(params);
  const platform = db.getPlatform();
  if (!(platform instanceof SqlitePlatform)) throw new Error('sqliteArrays runs on SQLite only');
  // The database is known once Kysely has opened its connection (this may be the first statement).
  const read = () => {
    const sqlite = heldDatabase(platform);
    if (!sqlite) throw new Error('sqliteArrays: the SQLite connection is not open');
    return sqlite.arrays(sql).all(params);
  };
  const kysely = db.getKysely();
  // Inside the entity manager's transaction this flow holds the connection already.
  if (kysely.isTransaction) return read();
  return kysely.connection().execute(async () => read());
}

/** Runs a write and returns how many rows it changed. */
export async function sqlRun(db: SqlScope, statement: Statement): Promise<number> {
  const held = db.heldSqlite;
  if (held) return Number(held.prepare(statement.text('sqlite')).run(statement.params).changes);
  const result = await db.getKysely().executeQuery(CompiledQuery.raw(statement.text(dialectOf(db)), statement.params as unknown[]));
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * Runs statements in order, as one statement on PostgreSQL: all but the last in its WITH (a
 * writing WITH runs whether or not the statement reads it, every part sees the same snapshot, and
 * a foreign key between the parts is checked at the statement's end). One round trip instead of
 * one each: in the transaction of a batch of 1,000 feedback records, two round trips more (two
 * `select 1`) took the server's CPU per batch from 23.9 to 26.5 ms. SQLite has no writing WITH,
 * and no round trips to save: each runs in turn. So none may read what another wrote. Returns
 * the rows the last one affected.
 */
export async function sqlRunTogether(db: SqlScope, statements: readonly Statement[]): Promise<number> {
  if (!statements.length) return 0;
  if (!onPostgres(db)) {
    let changes = 0;
    for (const statement of statements) changes = await sqlRun(db, statement);
    return changes;
  }
  const writes = statements.slice(0, -1).map((statement, index) => sql`${sql.raw(`w${index}`)} as (${statement})`);
  const last = statements.at(-1)!;
  return sqlRun(db, writes.length ? sql`with ${sql.join(writes, ', ')} ${last}` : last);
}

/** The scope's dialect, for a statement's text. */
function dialectOf(db: SqlScope): 'sqlite' | 'postgresql' {
  return onPostgres(db) ? 'postgresql' : 'sqlite';
}

/**
 * A fragment that depends on nothing but the dialect (a select list, a size expression), made
 * once per dialect: composing it again for every statement would cost as much as the rest of the
 * statement's text.
 */
export function perDialect(make: (db: SqlScope) => Statement): (db: SqlScope) => Statement {
  const made: { sqlite?: Statement; postgresql?: Statement } = {};
  return (db) => (made[dialectOf(db)] ??= make(db));
}

// Raw SQL returns dates and JSON as each driver stores them: SQLite gives epoch milliseconds and
// JSON text, PostgreSQL gives Date objects and parsed jsonb. These helpers make both look alike.

/** A date as a query parameter for the scope's database. */
export function sqlDate(db: SqlScope, date: Date): unknown {
  return db.getPlatform().processDateProperty(date);
}

export function dateFromSql(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value));
  return new Date(String(value));
}

export function isoFromSql(value: unknown): string {
  return dateFromSql(value).toISOString();
}

export function isoOrNullFromSql(value: unknown): string | null {
  return value === null || value === undefined ? null : isoFromSql(value);
}

export function jsonFromSql<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/**
 * A JSON column as text: SQLite stores it as text; PostgreSQL's jsonb is asked for as text too, so
 * that both return what `JSON.parse` reads (the driver would parse a jsonb string value itself).
 * `column` is the code's own.
 */
export function jsonAsText(db: SqlScope, column: string): Statement {
  return sql`${sql.raw(onPostgres(db) ? `${column}::text` : column)}`;
}

/**
 * The bytes of a column's value as stored (0 for null), a JSON column as its text. On SQLite the
 * length comes from the record's header, without reading the value. `column` is the code's own.
 */
export function storedBytes(db: SqlScope, column: string, kind: 'json' | 'text' = 'text'): Statement {
  return sql`coalesce(octet_length(${kind === 'json' ? jsonAsText(db, column) : sql.raw(column)}), 0)`;
}

/** A JSON text as a parameter for a JSON column (cast to jsonb on PostgreSQL). */
export function jsonParam(db: SqlScope, text: string | null): Statement {
  return onPostgres(db) ? sql`${text}::jsonb` : sql`${text}`;
}

/**
 * `column in (…)` for a filter's list, `1 = 0` for an empty one (it matches nothing), nothing when
 * the filter does not name the list. `column` is the code's own.
 */
export function inList(column: string, values: readonly unknown[] | undefined): Statement[] {
  if (values === undefined) return [];
  return [values.length ? sql`${sql.raw(column)} in (${sql.list(values)})` : sql`1 = 0`];
}

/** Whether the scope talks to PostgreSQL (row and advisory locks) rather than SQLite. */
export function onPostgres(db: SqlScope): boolean {
  return !(db.getPlatform() instanceof SqlitePlatform);
}

/**
 * Rows of a write in the order it takes their keys: on PostgreSQL sorted by `compare` (the key's
 * order), whatever the request's, since two transactions that take the same keys in other orders
 * deadlock there, each waiting for the other's uncommitted row. SQLite runs one write transaction
 * at a time: there the rows keep the request's order, which is also the order the table stores
 * them in and reads them back (with items inserted in call-id order, SQLite's page at 99,900 of
 * a queue of 100,000 took 1.62 times the p95 of its first page; in the request's order, 1.13).
 */
export function inLockOrder<T>(db: SqlScope, rows: readonly T[], compare: (a: T, b: T) => number): readonly T[] {
  return onPostgres(db) ? [...rows].sort(compare) : rows;
}

/** Code-unit order of two strings (what `inLockOrder` compares keys by). */
export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Order of rows by their `key` (a write's rows keyed by project and id). */
export const byKey = (a: { key: string }, b: { key: string }): number => byText(a.key, b.key);

/**
 * PostgreSQL: a FROM item that turns `synchronous_commit` off until the end of the statement's
 * own transaction, whose commit then does not wait for its log to reach the disk. For statements
 * outside a write's transaction whose loss in a crash costs nothing lasting (a delivery recorded
 * again, a notification).
 */
export const UNSYNCED_COMMIT = sql`(select set_config('synchronous_commit', 'off', true)) as unsynced`;

/** Row locks exist on PostgreSQL; SQLite serialises transactions on its one connection instead. `clause` is the code's own. */
export function lockClause(db: SqlScope, clause: string): Statement {
  return sql`${sql.raw(onPostgres(db) ? ` ${clause}` : '')}`;
}

/**
 * A transaction for work that is raw SQL only (the progress and claim paths), without the entity
 * manager's fork and unit of work; the scope handed to `work` sends everything through it.
 *
 * PostgreSQL: Kysely's transaction. SQLite: the one connection is taken from Kysely (its lock keeps
 * every other statement out until the transaction ends) and the statements run on it directly,
 * without Kysely's executor, promises and lock around each one (SQLite progress update, CPU per
 * request 1,262 → 1,035 µs with this and the statement wrappers made once); it begins immediate,
 * as every transaction of the dialect does, and the transactions asked for in one turn of the
 * event loop share one commit, each in its own savepoint (sqlite-group-commit.ts). Does not nest.
 */
export async function sqlTransaction<T>(db: SqlScope, work: (tx: SqlScope) => Promise<T>): Promise<T> {
  if (db.heldSqlite) throw new Error('sqlTransaction does not nest: the held connection is already in a transaction');
  const platform = db.getPlatform();
  const sqlite = platform instanceof SqlitePlatform ? heldDatabase(platform) : undefined;
  if (!sqlite) return db.getKysely().transaction().execute((trx) => work({ getKysely: () => trx, getPlatform: () => platform }));
  let group = groups.get(sqlite);
  if (!group) groups.set(sqlite, (group = new SqliteGroupCommit(sqlite)));
  return group.run(db.getKysely(), (connection) => work({ getKysely: () => connection, getPlatform: () => platform, heldSqlite: sqlite }));
}

/** Each SQLite database's group commit (sqlite-group-commit.ts). */
const groups = new WeakMap<LoupeSqliteDatabase, SqliteGroupCommit>();

/**
 * The SQLite file the scope's ORM serves, for a connection of another thread's own
 * (sqlite-reader.ts); undefined on PostgreSQL, for an in-memory database, and inside a transaction
 * (another connection would not see its writes).
 */
export function sqliteFileOf(db: SqlScope): string | undefined {
  if (db.heldSqlite) return undefined;
  const platform = db.getPlatform();
  if (!(platform instanceof SqlitePlatform) || db.getKysely().isTransaction) return undefined;
  const dialect: unknown = platform.getConfig().get('driverOptions');
  return dialect instanceof LoupeSqliteDialect && dialect.path !== ':memory:' ? dialect.path : undefined;
}

/** Reads through the scope (StatementReader), as a worker thread reads through a connection of its own. */
export function scopeReader(db: SqlScope): StatementReader {
  return {
    dialect: dialectOf(db),
    rows: (statement) => sqlRows(db, statement),
    arrays: async (statement) => (onPostgres(db) ? (await sqlRows<Record<string, unknown>>(db, statement)).map((row) => Object.values(row)) : sqliteArrays(db, statement)),
    // SQLite's transactions here take the write lock (BEGIN): a read there runs as it is.
    readOnly: (work) =>
      onPostgres(db)
        ? sqlTransaction(db, async (tx) => {
            await sqlRun(tx, sql`set transaction read only`);
            return work(scopeReader(tx));
          })
        : work(scopeReader(db)),
  };
}

/** How the scope's ORM reaches PostgreSQL, for a pool of another thread's own (postgres-reader.ts); undefined on SQLite. */
export function postgresConnectionOf(db: SqlScope): PostgresConnection | undefined {
  if (!onPostgres(db)) return undefined;
  const config = db.getPlatform().getConfig();
  const url = config.get('clientUrl');
  if (!url) return undefined;
  // The pool's own time limits, by pg's names (orm.ts): its Client class stays behind.
  const options = (config.get('driverOptions') ?? {}) as Record<string, unknown>;
  const limits = Object.fromEntries(Object.entries(options).filter((entry): entry is [string, number] => typeof entry[1] === 'number'));
  return { url, limits };
}

function heldDatabase(platform: Platform): LoupeSqliteDatabase | undefined {
  const dialect: unknown = platform.getConfig().get('driverOptions');
  return dialect instanceof LoupeSqliteDialect ? dialect.database : undefined;
}
