import type { Platform } from '@mikro-orm/core';
import { SqlitePlatform } from '@mikro-orm/sql';
import { CompiledQuery, type Kysely } from 'kysely';
import { BEGIN, LoupeSqliteDialect, type LoupeSqliteDatabase } from './sqlite-dialect.ts';

// Hand-written SQL goes through Kysely with bound parameters, not through em.execute(), which
// writes the values into the SQL text: that would make every statement unique (nothing for the
// databases to reuse, a statement cache that holds megabytes of values) and makes text such as
// U+0000 break the statement. Kysely on the em follows the em's transaction.

/**
 * What hand-written SQL runs on: an entity manager, or the transaction `sqlTransaction` hands its
 * work. Within a SQLite transaction the statements go straight to the held connection.
 */
export type SqlScope = {
  getKysely(): Kysely<any>;
  getPlatform(): Platform;
  readonly [HELD]?: LoupeSqliteDatabase;
};
const HELD = Symbol('loupe.sqlite.heldConnection');

/** `?` placeholders, as written in this project's SQL, in the form the em's database takes. */
function compile(em: SqlScope, sql: string, params: readonly unknown[]): CompiledQuery {
  let text = sql;
  if (onPostgres(em)) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
  }
  return CompiledQuery.raw(text, params as unknown[]);
}

/** Runs a query and returns its rows. */
export async function sqlRows<T = Record<string, unknown>>(em: SqlScope, sql: string, params: readonly unknown[] = []): Promise<T[]> {
  const held = em[HELD];
  if (held) return held.prepare(sql).all(params) as T[];
  const result = await em.getKysely().executeQuery(compile(em, sql, params));
  return result.rows as T[];
}

/** Runs a write and returns how many rows it changed. */
export async function sqlRun(em: SqlScope, sql: string, params: readonly unknown[] = []): Promise<number> {
  const held = em[HELD];
  if (held) return Number(held.prepare(sql).run(params).changes);
  const result = await em.getKysely().executeQuery(compile(em, sql, params));
  return Number(result.numAffectedRows ?? 0n);
}

// Raw SQL returns dates and JSON as each driver stores them: SQLite gives epoch milliseconds and
// JSON text, PostgreSQL gives Date objects and parsed jsonb. These helpers make both look alike.

/** A date as a query parameter for the em's database. */
export function sqlDate(em: SqlScope, date: Date): unknown {
  return em.getPlatform().processDateProperty(date);
}

export function isoFromSql(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value)).toISOString();
  return new Date(String(value)).toISOString();
}

export function isoOrNullFromSql(value: unknown): string | null {
  return value === null || value === undefined ? null : isoFromSql(value);
}

export function jsonFromSql<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** `?, ?, ?` for a list of parameters. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/** Whether the em talks to PostgreSQL (row and advisory locks) rather than SQLite. */
export function onPostgres(em: SqlScope): boolean {
  return !(em.getPlatform() instanceof SqlitePlatform);
}

/** Row locks exist on PostgreSQL; SQLite serialises transactions on its one connection instead. */
export function lockClause(em: SqlScope, clause: string): string {
  return onPostgres(em) ? ` ${clause}` : '';
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
export async function sqlTransaction<T>(em: SqlScope, work: (tx: SqlScope) => Promise<T>): Promise<T> {
  if (em[HELD]) throw new Error('sqlTransaction does not nest: the held connection is already in a transaction');
  const platform = em.getPlatform();
  const sqlite = platform instanceof SqlitePlatform ? heldDatabase(platform) : undefined;
  if (!sqlite) return em.getKysely().transaction().execute((trx) => work({ getKysely: () => trx, getPlatform: () => platform }));
  return em.getKysely().connection().execute(async (connection) => {
    sqlite.prepare(BEGIN).run([]);
    try {
      const result = await work({ getKysely: () => connection, getPlatform: () => platform, [HELD]: sqlite });
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
