import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { byText, dateFromSql, sqlDate, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { invalid } from './errors.ts';

/**
 * Cursors of the query operations (contract 5.6): the sort values of a page's last row, its
 * position when the query knows it (the items query's include_position), a fingerprint of the
 * query that made the page (project, queue, filter, sort), and a seal over all three. The next
 * page is the rows strictly after those values in the same order — a keyset, so its cost does not
 * grow with depth, and rows added meanwhile are neither skipped nor repeated.
 *
 * A cursor is opaque to clients but not secret: it is base64url JSON. The seal is an HMAC-SHA-256
 * under the server key (LOUPE_SECRET, or the one the server keeps in its database), so a cursor
 * altered in any way, cut short, or rebuilt and hashed again by a client is refused; only the
 * server makes cursors. Its values are still checked by type before they reach the database, and
 * its position to be a bounded integer (it only numbers rows, never goes into SQL).
 */

/** A sort value as it travels in a cursor: dates keep their type, so they are bound as dates again. */
type CursorValue = string | null | { d: string };

type CursorBody = { q: string; k: CursorValue[]; p?: number; s: string };

/** What a cursor says: the sort values of the row it follows, and that row's position if known. */
export type DecodedCursor = { values: unknown[]; position: number | null };

/**
 * Largest position a cursor may carry: far above any queue, and small enough that adding a page's
 * rank to it stays an exact integer.
 */
const MAX_POSITION = 2 ** 48;

/**
 * Seals cursors under the server key. The HMAC key is derived from the secret for this one use,
 * so that the same secret can key other things without their tags ever being interchangeable.
 */
export class CursorSeal {
  readonly #key: Buffer;

  constructor(secret: string) {
    this.#key = createHmac('sha256', secret).update('loupe cursor seal v1').digest();
  }

  /** The seal of a cursor's contents: any change to the fingerprint, values or position breaks it. */
  seal(body: Omit<CursorBody, 's'>): string {
    return createHmac('sha256', this.#key).update(canonicalJson({ q: body.q, k: body.k, p: body.p })).digest('base64url');
  }

  /** Whether `seal` is the seal of `body` (compared in constant time). */
  holds(body: CursorBody): boolean {
    const expected = Buffer.from(this.seal(body));
    const given = Buffer.from(body.s);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

/** The key of a query, for binding its cursors (the same query gives the same digest), and the seal they carry. */
export type QueryFingerprint = { digest: string; seal: CursorSeal };

/** What a cursor belongs to: the query (its fingerprint) and the keys it orders by. */
export type CursorQuery = { fingerprint: QueryFingerprint; keys: readonly KeysetKey[] };

export function queryFingerprint(query: Record<string, unknown>, seal: CursorSeal): QueryFingerprint {
  return { digest: createHash('sha256').update(canonicalJson(query)).digest('base64url').slice(0, 22), seal };
}

/** JSON with object keys sorted and undefined members dropped, so equal queries print alike. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => byText(a, b));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * The cursor after `row`: its values of the keys, as the database returned them, and its 1-based
 * position in the query's ranking when known (`null`: the cursor carries none).
 */
export function encodeCursor({ fingerprint, keys }: CursorQuery, row: Record<string, unknown>, position: number | null = null): string {
  const contents = { q: fingerprint.digest, k: keys.map((key) => toCursorValue(key, row[key.field])), ...(position === null ? {} : { p: position }) };
  const body: CursorBody = { ...contents, s: fingerprint.seal.seal(contents) };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

function toCursorValue(key: KeysetKey, value: unknown): CursorValue {
  if (value === null || value === undefined) return null;
  if (key.type === 'date') return { d: dateFromSql(value).toISOString() };
  return String(value);
}

const notACursor = () => invalid('cursor is not a cursor this service gave: pass next_cursor from a previous page unchanged.');

/**
 * The sort values a cursor holds, ready to bind, and its position, after checking that it is
 * whole (its seal), that it was made by the query given (same fingerprint), and that it holds a
 * value of the right type for each sort key — a forged value must not reach the database as a
 * comparison it refuses.
 */
export function decodeCursor(db: SqlScope, { fingerprint, keys }: CursorQuery, cursor: string): DecodedCursor {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw notACursor();
  }
  if (!isCursorBody(body) || body.k.length !== keys.length || !fingerprint.seal.holds(body)) throw notACursor();
  if (body.q !== fingerprint.digest) {
    throw invalid('cursor does not belong to this query: it was made by a query with another project, queue, filter or sort.');
  }
  const values = keys.map((key, index) => {
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
  return { values, position: body.p ?? null };
}

function isCursorBody(body: unknown): body is CursorBody {
  if (!body || typeof body !== 'object') return false;
  const { q, k, p, s } = body as Record<string, unknown>;
  const position = p === undefined || (Number.isSafeInteger(p) && (p as number) >= 1 && (p as number) <= MAX_POSITION);
  return typeof q === 'string' && typeof s === 'string' && Array.isArray(k) && k.every(isCursorValue) && position;
}

function isCursorValue(value: unknown): value is CursorValue {
  if (value === null || typeof value === 'string') return true;
  if (typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === 'd' && typeof (value as { d: unknown }).d === 'string';
}

/**
 * One key of a keyset order. A nullable key sorts its nulls after every value ascending and before
 * every value descending (`keysetOrder` puts it in the ORDER BY terms), the same on both databases.
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

/** The ORDER BY terms of `keys` (without the words `order by`). */
export function keysetOrder(keys: readonly KeysetKey[]): Statement {
  return sql`${sql.raw(keys.map((key) => `${key.column} ${key.direction}${nullsSql(key)}`).join(', '))}`;
}

function nullsSql(key: KeysetKey): string {
  return key.nullable ? ` nulls ${key.direction === 'asc' ? 'last' : 'first'}` : '';
}

/** Which side of a row a keyset bound keeps: the rows strictly after it, or it and those before it. */
export type KeysetSide = 'after' | 'not after';

/**
 * `row strictly after <values>` (or `row not after <values>`: at or before them) in the order of
 * `keys`: a lexicographic comparison that honours each key's direction and nulls, every value
 * bound. The last key must be unique (the id). Every keyset of the queries is written by this one
 * function, so that each reads its index the same way.
 */
export function keyset(keys: readonly KeysetKey[], values: readonly unknown[], side: KeysetSide): Statement {
  const lead = keys[0]!;
  if (keys.every((key) => key.direction === lead.direction && !key.nullable)) {
    // One direction, no nulls: a row-value comparison, which both databases turn into an exact
    // seek on the (…, <key>, id) index. The expanded form below only narrows on the leading key,
    // and scans every row that shares its value (an add of 10,000 items shares one created_at).
    const op = side === 'after' ? strictOp(lead, side) : inclusiveOp(lead, side);
    return sql`(${sql.raw(keys.map((key) => key.column).join(', '))}) ${sql.raw(op)} (${sql.list(values)})`;
  }
  const compared = lexicographic({ keys, values, side }, 0);
  if (lead.nullable || keys.length === 1) return compared;
  // A redundant bound on the leading key: what lets the databases read the index as a range.
  return sql`${column(lead)} ${sql.raw(inclusiveOp(lead, side))} ${values[0]} and ${compared}`;
}

/** Whether the side of a key's value that `side` keeps holds the greater values. */
const upward = (key: KeysetKey, side: KeysetSide) => (key.direction === 'asc') === (side === 'after');
/** A keyset bound: the keys, a row's values of them, and which side of the row is asked for. */
type Bound = { keys: readonly KeysetKey[]; values: readonly unknown[]; side: KeysetSide };

const strictOp = (key: KeysetKey, side: KeysetSide) => (upward(key, side) ? '>' : '<');
const inclusiveOp = (key: KeysetKey, side: KeysetSide) => (upward(key, side) ? '>=' : '<=');
/** A key's column, the code's own. */
const column = (key: KeysetKey) => sql.raw(key.column);

function lexicographic({ keys, values, side }: Bound, index: number): Statement {
  const key = keys[index]!;
  const value = values[index];
  if (index === keys.length - 1 && side === 'not after' && !key.nullable) return sql`${column(key)} ${sql.raw(inclusiveOp(key, side))} ${value}`;
  const beyond = strictly(key, value, side);
  const same = value === null ? sql`${column(key)} is null` : sql`${column(key)} = ${value}`;
  if (index === keys.length - 1) return side === 'after' ? beyond : sql`(${beyond} or ${same})`;
  return sql`(${beyond} or (${same} and ${lexicographic({ keys, values, side }, index + 1)}))`;
}

/** The rows past `value` on one key, towards the side kept: strictly after it, or strictly before it. */
function strictly(key: KeysetKey, value: unknown, side: KeysetSide): Statement {
  const op = strictOp(key, side);
  if (!key.nullable) return sql`${column(key)} ${sql.raw(op)} ${value}`;
  // Nulls sort as the greatest value (last ascending, first descending), so towards greater values
  // come the nulls too, and past a null there is nothing greater.
  if (op === '>') return value === null ? sql`1 = 0` : sql`(${column(key)} > ${value} or ${column(key)} is null)`;
  return value === null ? sql`${column(key)} is not null` : sql`${column(key)} < ${value}`;
}
