import { ConnectionException } from '@mikro-orm/core';
import { QUERY_READ_TIMEOUT } from './self-closing-client.ts';

// Faults that mean "the database cannot serve this right now; the same request may succeed
// shortly", as opposed to a fault in a query (500). PostgreSQL reports SQLSTATE strings in
// `code`; node:sqlite reports SQLite's extended result code as a number in `errcode`, whose low
// byte is the primary code.

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '57014', // query_canceled: statement_timeout (a lock wait, an overloaded server)
  '25P03', // idle_in_transaction_session_timeout
  '40P01', // deadlock_detected: the transaction was rolled back, a retry can succeed
  '40001', // serialization_failure: likewise
]);
// Class 08 is connection exceptions, except 08P01 (protocol violation): a bad request, not an outage.
const CONNECTION_CLASS = /^08(?!P01$)/;

const SQLITE_BUSY = 5; // another connection (the admin tool, another process) holds the lock past busy_timeout
const SQLITE_LOCKED = 6;
const SQLITE_IOERR = 10; // the disk or file system failed a read or write
const SQLITE_FULL = 13; // the disk is full
const SQLITE_CANTOPEN = 14; // the file (or its -wal/-shm) cannot be opened
const SQLITE_PROTOCOL = 15; // a WAL lock race that SQLite gave up retrying
const SQLITE_UNAVAILABLE = new Set([SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL]);

// Errors of pg and pg-pool that carry no code, by their fixed messages.
const UNAVAILABLE_MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /^timeout expired$/i,
  /connection (is )?closed/i,
  /cannot use a pool after calling end/i,
  /client has encountered a connection error/i,
  /client was closed and is not queryable/i,
];

/** Whether PostgreSQL rolled the transaction back for a deadlock or a serialization failure (retrying it can succeed). */
export function isTransactionConflict(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === '40P01' || code === '40001') return true;
  }
  return false;
}

/** SQLite's primary result code of a node:sqlite error, or undefined for any other error. */
export function sqlitePrimaryCode(error: unknown): number | undefined {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === 'number' ? errcode & 0xff : undefined;
}

/** Whether an error (or anything in its `cause` chain) says the database cannot serve right now. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof ConnectionException) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || CONNECTION_CLASS.test(code))) return true;
    const sqlite = sqlitePrimaryCode(e);
    if (sqlite !== undefined) return SQLITE_UNAVAILABLE.has(sqlite);
    if (e instanceof AggregateError && e.errors.some(isDatabaseUnavailable)) return true;
    if (e.message === QUERY_READ_TIMEOUT || UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(e.message))) return true;
  }
  return false;
}
