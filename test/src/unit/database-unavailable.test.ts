import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable, sqlitePrimaryCode } from '../../../server/src/db/unavailable.ts';

// SQLite faults are told apart by node:sqlite's numeric `errcode` (the extended result code; its
// low byte is the primary code), not by message text: these are real errors from the module.

const dir = mkdtempSync(join(tmpdir(), 'loupe-sqlite-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function errorOf(work: () => unknown): Error & { errcode?: number } {
  try {
    work();
  } catch (error) {
    return error as Error & { errcode?: number };
  }
  throw new Error('no error was thrown');
}

function database(name: string): DatabaseSync {
  const db = new DatabaseSync(join(dir, name));
  db.exec('pragma journal_mode = wal; create table if not exists t (x unique)');
  return db;
}

describe('database faults that mean "unavailable, retry shortly"', () => {
  it('SQLite busy (another connection holds the write lock), including the extended busy-snapshot code', () => {
    const [a, b] = [database('busy.db'), database('busy.db')];
    a.exec('begin immediate; insert into t values (1)');
    const busy = errorOf(() => b.exec('begin immediate'));
    a.exec('commit');
    expect(busy.errcode).toBe(5);
    b.exec('begin');
    b.prepare('select * from t').all();
    a.exec('insert into t values (2)');
    const snapshot = errorOf(() => b.exec('insert into t values (3)'));
    b.exec('rollback');
    expect(snapshot.errcode).toBe(517); // SQLITE_BUSY_SNAPSHOT
    expect(sqlitePrimaryCode(snapshot)).toBe(5);
    expect(isDatabaseUnavailable(busy)).toBe(true);
    expect(isDatabaseUnavailable(snapshot)).toBe(true);
  });

  it('SQLite cannot open, and disk full', () => {
    const cantOpen = errorOf(() => new DatabaseSync(join(dir, 'missing-folder', 'x.db')));
    expect(cantOpen.errcode).toBe(14);
    const db = database('full.db');
    db.exec('pragma max_page_count = 3');
    const full = errorOf(() => {
      for (let i = 0; i < 100; i++) db.prepare('insert into t values (?)').run('x'.repeat(2000) + i);
    });
    expect(full.errcode).toBe(13);
    expect(isDatabaseUnavailable(cantOpen)).toBe(true);
    expect(isDatabaseUnavailable(full)).toBe(true);
  });

  it('not a fault of the database: SQL errors and constraint violations stay unexpected (500)', () => {
    const db = database('plain.db');
    const logic = errorOf(() => db.exec('select * from no_such_table'));
    db.exec('insert into t values (42)');
    const constraint = errorOf(() => db.exec('insert into t values (42)'));
    expect([logic.errcode, constraint.errcode]).toEqual([1, 2067]);
    expect(isDatabaseUnavailable(logic)).toBe(false);
    expect(isDatabaseUnavailable(constraint)).toBe(false);
  });

  it('the same, wrapped the way the ORM wraps driver errors (cause chain and copied fields)', () => {
    const db = database('wrapped.db');
    db.exec('begin immediate');
    const other = database('wrapped.db');
    const busy = errorOf(() => other.exec('begin immediate'));
    db.exec('rollback');
    expect(isDatabaseUnavailable(new Error('query failed', { cause: busy }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error(busy.message), { errcode: busy.errcode }))).toBe(true);
  });

  it('PostgreSQL: timeouts, shutdowns, deadlocks and serialization failures by SQLSTATE; other SQL errors not', () => {
    const pgError = (code: string) => Object.assign(new Error('x'), { code });
    for (const code of ['57014', '57P01', '25P03', '40P01', '40001', '08006', 'ECONNREFUSED']) {
      expect(isDatabaseUnavailable(pgError(code)), code).toBe(true);
    }
    for (const code of ['23505', '42P01', '08P01', '22P02']) expect(isDatabaseUnavailable(pgError(code)), code).toBe(false);
    expect(isDatabaseUnavailable(new Error('Query read timeout'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
  });
});
