import { ConnectionException } from '@mikro-orm/core';

// Driver error codes that mean "the database cannot be reached right now", as opposed to a fault
// in a query: PostgreSQL's connection classes (08xxx) and shutdown states, socket errors, SQLite's
// lock and I/O states.
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_CANTOPEN',
]);
// Class 08 is connection exceptions, except 08P01 (protocol violation): a bad request, not an outage.
const CONNECTION_CLASS = /^08(?!P01$)/;
const UNAVAILABLE_MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /connection (is )?closed/i,
  /cannot use a pool after calling end/i,
  /database is locked/i,
];

/** Whether an error (or anything in its `cause` chain) says the database is unreachable. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof ConnectionException) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || CONNECTION_CLASS.test(code))) return true;
    if (e instanceof AggregateError && e.errors.some(isDatabaseUnavailable)) return true;
    if (UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(e.message))) return true;
  }
  return false;
}
