import type { Platform } from '@mikro-orm/core';
import { SqlitePlatform } from '@mikro-orm/sql';
import { CompiledQuery, type Kysely } from 'kysely';
import { BEGIN, LoupeSqliteDialect, type LoupeSqliteDatabase } from './sqlite-dialect.ts';
import { Statement } from './statement.ts';

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

/**
 * `?` placeholders, as written in this project's SQL, in the form the scope's database takes. Every
 * `?` in this project's SQL is a placeholder (no `?` in a literal, no jsonb `?` operator).
 *
 * Why strings with `?` and not Kysely's `sql` template, which numbers placeholders per dialect:
 * the template builds and compiles a node tree for every statement. Measured on the progress
 * path's item statement (node 24, this machine): SQLite 2.5–4.7 µs per statement against nothing
 * (the text goes to the held connection as written), PostgreSQL 4.4–5.4 µs against 1.4–1.6 µs for
 * this rewrite; with five statements per progress update that is 2–4 % of its CPU on SQLite
 * (560–660 µs per request in the progress benchmark).
 */
function compile(db: SqlScope, sql: string, params: readonly unknown[]): CompiledQuery {
  let text = sql;
  if (onPostgres(db)) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
  }
  return CompiledQuery.raw(text, params as unknown[]);
}

/**
 * @deprecated A term in the `?` text form, from a helper not converted yet (a keyset bound, the
 * queue lock term), as a statement to compose into the `sql` template. Goes with the text form.
 */
export function statementOfText(term: { sql: string; params: readonly unknown[] }): Statement {
  return new Statement(term.sql.split('?'), term.params);
}

/** Runs a query and returns its rows. */
export async function sqlRows<T = Record<string, unknown>>(db: SqlScope, statement: Statement): Promise<T[]>;
/** @deprecated `?` text with its parameters: being replaced by the `sql` template (statement.ts). */
export async function sqlRows<T = Record<string, unknown>>(db: SqlScope, sql: string, params?: readonly unknown[]): Promise<T[]>;
export async function sqlRows<T>(db: SqlScope, query: string | Statement, args: readonly unknown[] = []): Promise<T[]> {
  if (query instanceof Statement) return statementRows<T>(db, query);
  const sql = query;
  const params = args;
  const held = db.heldSqlite;
  if (held) return held.prepare(sql).all(params) as T[];
  const result = await db.getKysely().executeQuery(compile(db, sql, params));
  return result.rows as T[];
}

/**
 * Runs a read on SQLite and returns its rows as arrays of values in the select list's order:
 * node:sqlite builds them several times faster than rows with named properties (a page of 2,000
 * feedback records, payloads parsed and times converted into response objects: 5.4 ms, against
 * 8–14 ms for the same page built as one JSON array by SQLite and parsed). Outside a transaction
 * the connection is taken from Kysely first, so that no other statement runs meanwhile.
 */
export async function sqliteArrays(db: SqlScope, query: string | Statement, args: readonly unknown[] = []): Promise<unknown[][]> {
  const sql = query instanceof Statement ? query.text('sqlite') : query;
  const params = query instanceof Statement ? query.params : args;
  const held = db.heldSqlite;
  if (held) return held.arrays(sql).all(params);
  const platform = db.getPlatform();
  const sqlite = platform instanceof SqlitePlatform ? heldDatabase(platform) : undefined;
  if (!sqlite) throw new Error('sqliteArrays runs on SQLite only');
  const kysely = db.getKysely();
  // Inside the entity manager's transaction this flow holds the connection already.
  if (kysely.isTransaction) return sqlite.arrays(sql).all(params);
  return kysely.connection().execute(async () => sqlite.arrays(sql).all(params));
}

/** Runs a write and returns how many rows it changed. */
export async function sqlRun(db: SqlScope, statement: Statement): Promise<number>;
/** @deprecated `?` text with its parameters: being replaced by the `sql` template (statement.ts). */
export async function sqlRun(db: SqlScope, sql: string, params?: readonly unknown[]): Promise<number>;
export async function sqlRun(db: SqlScope, query: string | Statement, args: readonly unknown[] = []): Promise<number> {
  if (query instanceof Statement) return statementRun(db, query);
  const sql = query;
  const params = args;
  const held = db.heldSqlite;
  if (held) return Number(held.prepare(sql).run(params).changes);
  const result = await db.getKysely().executeQuery(compile(db, sql, params));
  return Number(result.numAffectedRows ?? 0n);
}

/** The scope's dialect, for a statement's text. */
function dialectOf(db: SqlScope): 'sqlite' | 'postgresql' {
  return onPostgres(db) ? 'postgresql' : 'sqlite';
}

async function statementRows<T>(db: SqlScope, statement: Statement): Promise<T[]> {
  const held = db.heldSqlite;
  if (held) return held.prepare(statement.text('sqlite')).all(statement.params) as T[];
  const result = await db.getKysely().executeQuery(CompiledQuery.raw(statement.text(dialectOf(db)), statement.params as unknown[]));
  return result.rows as T[];
}

async function statementRun(db: SqlScope, statement: Statement): Promise<number> {
  const held = db.heldSqlite;
  if (held) return Number(held.prepare(statement.text('sqlite')).run(statement.params).changes);
  const result = await db.getKysely().executeQuery(CompiledQuery.raw(statement.text(dialectOf(db)), statement.params as unknown[]));
  return Number(result.numAffectedRows ?? 0n);
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
 */
export function jsonAsText(db: SqlScope, column: string): string {
  return onPostgres(db) ? `${column}::text` : column;
}

/**
 * SQL for the bytes of a column's value as stored (0 for null), a JSON column as its text. On
 * SQLite the length comes from the record's header, without reading the value.
 */
export function storedBytes(db: SqlScope, column: string, kind: 'json' | 'text' = 'text'): string {
  return `coalesce(octet_length(${kind === 'json' ? jsonAsText(db, column) : column}), 0)`;
}

/** A JSON value as a query parameter for a JSON column, with its placeholder (`?::jsonb` on PostgreSQL). */
export function jsonPlaceholder(db: SqlScope): string {
  return onPostgres(db) ? '?::jsonb' : '?';
}

/** `?, ?, ?` for a list of parameters. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/** The conditions of a query's filter, each with its parameters, joined by `and`. */
export class Conditions {
  readonly #conditions: string[] = [];
  readonly params: unknown[] = [];

  add(condition: string, ...params: unknown[]): void {
    this.#conditions.push(condition);
    this.params.push(...params);
  }

  /** `column in (…)` when values are given; an empty list matches nothing. */
  inList(column: string, values: readonly unknown[] | undefined): void {
    if (values === undefined) return;
    if (!values.length) this.add('1 = 0');
    else this.add(`${column} in (${placeholders(values.length)})`, ...values);
  }

  /** `column = ?` when a value is given. */
  equals(column: string, value: unknown): void {
    if (value !== undefined) this.add(`${column} = ?`, value);
  }

  get count(): number {
    return this.#conditions.length;
  }

  /** The conditions joined by `and` (there is at least one). */
  get sql(): string {
    return this.#conditions.join(' and ');
  }
}

/** Whether the scope talks to PostgreSQL (row and advisory locks) rather than SQLite. */
export function onPostgres(db: SqlScope): boolean {
  return !(db.getPlatform() instanceof SqlitePlatform);
}

/** Row locks exist on PostgreSQL; SQLite serialises transactions on its one connection instead. */
export function lockClause(db: SqlScope, clause: string): string {
  return onPostgres(db) ? ` ${clause}` : '';
}

/**
 * A transaction for work that is raw SQL only (the progress and claim paths), without the entity
 * manager's fork and unit of work; the scope handed to `work` sends everything through it.
 *
 * PostgreSQL: Kysely's transaction. SQLite: the one connection is taken from Kysely (its lock keeps
 * every other statement out until the transaction ends) and the statements run on it directly,
 * without Kysely's executor, promises and lock around each one (SQLite progress update, CPU per
 * request 1,262 → 1,035 µs with this and the statement wrappers made once); it begins immediate,
 * as every transaction of the dialect does. Does not nest.
 */
export async function sqlTransaction<T>(db: SqlScope, work: (tx: SqlScope) => Promise<T>): Promise<T> {
  if (db.heldSqlite) throw new Error('sqlTransaction does not nest: the held connection is already in a transaction');
  const platform = db.getPlatform();
  const sqlite = platform instanceof SqlitePlatform ? heldDatabase(platform) : undefined;
  if (!sqlite) return db.getKysely().transaction().execute((trx) => work({ getKysely: () => trx, getPlatform: () => platform }));
  return db.getKysely().connection().execute(async (connection) => {
    sqlite.prepare(BEGIN).run([]);
    try {
      const result = await work({ getKysely: () => connection, getPlatform: () => platform, heldSqlite: sqlite });
      sqlite.prepare('commit').run([]);
      return result;
    } catch (error) {
      if (sqlite.inTransaction()) sqlite.prepare('rollback').run([]);
      throw error;
    }
  });
}

function heldDatabase(platform: Platform): LoupeSqliteDatabase | undefined {
  const dialect: unknown = platform.getConfig().get('driverOptions');
  return dialect instanceof LoupeSqliteDialect ? dialect.database : undefined;
}
