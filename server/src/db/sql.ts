import { SqlitePlatform } from '@mikro-orm/sql';
import type { Em } from './orm.ts';

// Raw SQL returns dates and JSON as each driver stores them: SQLite gives epoch milliseconds and
// JSON text, PostgreSQL gives Date objects and parsed jsonb. These helpers make both look alike.

/** A date as a query parameter for the em's database. */
export function sqlDate(em: Em, date: Date): unknown {
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
export function onPostgres(em: Em): boolean {
  return !(em.getPlatform() instanceof SqlitePlatform);
}

/** Row locks exist on PostgreSQL; SQLite serialises transactions on its one connection instead. */
export function lockClause(em: Em, clause: string): string {
  return onPostgres(em) ? ` ${clause}` : '';
}

/** Rows changed by a write run with method 'run', whichever driver answered. */
export function affectedRows(result: unknown): number {
  const r = result as { affectedRows?: number; changes?: number; rowCount?: number };
  return Number(r.affectedRows ?? r.changes ?? r.rowCount ?? 0);
}
