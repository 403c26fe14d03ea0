import { createHash } from 'node:crypto';
import { dateFromSql, sqlDate, type SqlScope } from '../db/sql.ts';
import { invalid } from './errors.ts';

/**
 * Cursors of the query operations (contract 5.6): the sort values of a page's last row, and a
 * fingerprint of the query that made the page (project, queue, filter, sort). The next page is
 * the rows strictly after those values in the same order — a keyset, so its cost does not grow
 * with depth, and rows added meanwhile are neither skipped nor repeated.
 *
 * A cursor is opaque to clients but not secret: it is base64url JSON, and one a client forges can
 * only name a position in a query the client may run anyway. It is checked strictly all the same.
 */

/** A sort value as it travels in a cursor: dates keep their type, so they are bound as dates again. */
type CursorValue = string | null | { d: string };

type CursorBody = { q: string; k: CursorValue[] };

/** The key of a query, for binding its cursors: the same query gives the same fingerprint. */
export function queryFingerprint(query: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(query)).digest('base64url').slice(0, 22);
}

/** JSON with object keys sorted and undefined members dropped, so equal queries print alike. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The cursor after `row`: its values of the keys, as the database returned them. */
export function encodeCursor(fingerprint: string, keys: readonly KeysetKey[], row: Record<string, unknown>): string {
  const body: CursorBody = { q: fingerprint, k: keys.map((key) => toCursorValue(key, row[key.field])) };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

function toCursorValue(key: KeysetKey, value: unknown): CursorValue {
  if (value === null || value === undefined) return null;
  if (key.type === 'date') return { d: dateFromSql(value).toISOString() };
  return String(value);
}

const notACursor = () => invalid('cursor is not a cursor this service gave: pass next_cursor from a previous page unchanged.');

/**
 * The sort values a cursor holds, ready to bind, after checking that it was made by the query
 * given (same fingerprint) and holds a value of the right type for each sort key — a forged value
 * must not reach the database as a comparison it refuses.
 */
export function decodeCursor(db: SqlScope, cursor: string, fingerprint: string, keys: readonly KeysetKey[]): unknown[] {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw notACursor();
  }
  if (!isCursorBody(body) || body.k.length !== keys.length) throw notACursor();
  if (body.q !== fingerprint) {
    throw invalid('cursor does not belong to this query: it was made by a query with another project, queue, filter or sort.');
  }
  return keys.map((key, index) => {
    const value = body.k[index]!;
    if (value === null) {
      if (!key.nullable) throw notACursor();
      return null;
    }
    if (key.type === 'text') {
      if (typeof value !== 'string') throw notACursor();
      return value;
    }
    const date = typeof value === 'object' ? new Date(value.d) : new Date(Number.NaN);
    if (Number.isNaN(date.getTime())) throw notACursor();
    return sqlDate(db, date);
  });
}

function isCursorBody(body: unknown): body is CursorBody {
  if (!body || typeof body !== 'object') return false;
  const { q, k } = body as Record<string, unknown>;
  return typeof q === 'string' && Array.isArray(k) && k.every(isCursorValue);
}

function isCursorValue(value: unknown): value is CursorValue {
  if (value === null || typeof value === 'string') return true;
  if (typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === 'd' && typeof (value as { d: unknown }).d === 'string';
}

/**
 * One key of a keyset order. A nullable key sorts its nulls after every value ascending and before
 * every value descending (`nullsSql` gives the clause to put in ORDER BY), the same on both databases.
 */
export type KeysetKey = {
  /** The column as written in the query's SQL. */
  column: string;
  /** The row member the query's rows hold it in. */
  field: string;
  type: 'date' | 'text';
  direction: 'asc' | 'desc';
  nullable?: boolean;
};

export function orderSql(keys: readonly KeysetKey[]): string {
  return keys.map((key) => `${key.column} ${key.direction}${nullsSql(key)}`).join(', ');
}

function nullsSql(key: KeysetKey): string {
  return key.nullable ? ` nulls ${key.direction === 'asc' ? 'last' : 'first'}` : '';
}

/**
 * `row strictly after <values>` in the order of `keys`, as SQL with parameters: a lexicographic
 * comparison that honours each key's direction and nulls. The last key must be unique (the id).
 * A redundant bound on the leading key is added when it is not nullable: it is what lets the
 * databases read the (…, <key>, id) index as a range.
 */
export function keysetAfter(keys: readonly KeysetKey[], values: readonly unknown[]): { sql: string; params: unknown[] } {
  const direction = keys[0]!.direction;
  if (keys.every((key) => key.direction === direction && !key.nullable)) {
    // One direction, no nulls: a row-value comparison, which both databases turn into an exact
    // seek on the (…, <key>, id) index. The expanded form below only narrows on the leading key,
    // and scans every row that shares its value (an add of 10,000 items shares one created_at).
    return {
      sql: `(${keys.map((key) => key.column).join(', ')}) ${direction === 'asc' ? '>' : '<'} (${keys.map(() => '?').join(', ')})`,
      params: [...values],
    };
  }
  const compared = after(keys, values, 0);
  const lead = keys[0]!;
  if (lead.nullable || keys.length === 1) return compared;
  return {
    sql: `${lead.column} ${lead.direction === 'asc' ? '>=' : '<='} ? and ${compared.sql}`,
    params: [values[0], ...compared.params],
  };
}

function after(keys: readonly KeysetKey[], values: readonly unknown[], index: number): { sql: string; params: unknown[] } {
  const key = keys[index]!;
  const value = values[index];
  const beyond = strictlyAfter(key, value);
  if (index === keys.length - 1) return beyond;
  const rest = after(keys, values, index + 1);
  const same = value === null ? { sql: `${key.column} is null`, params: [] } : { sql: `${key.column} = ?`, params: [value] };
  return {
    sql: `(${beyond.sql} or (${same.sql} and ${rest.sql}))`,
    params: [...beyond.params, ...same.params, ...rest.params],
  };
}

function strictlyAfter(key: KeysetKey, value: unknown): { sql: string; params: unknown[] } {
  const op = key.direction === 'asc' ? '>' : '<';
  if (!key.nullable) return { sql: `${key.column} ${op} ?`, params: [value] };
  if (key.direction === 'asc') {
    // Nulls come last: after a null there is no greater value; after a value come greater ones and nulls.
    return value === null ? { sql: '1 = 0', params: [] } : { sql: `(${key.column} > ? or ${key.column} is null)`, params: [value] };
  }
  // Nulls come first: after a null come all values; after a value, smaller ones.
  return value === null ? { sql: `${key.column} is not null`, params: [] } : { sql: `${key.column} < ?`, params: [value] };
}
