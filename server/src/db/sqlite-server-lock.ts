import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sqlitePrimaryCode } from './unavailable.ts';

const SQLITE_BUSY = 5;

/** A second server process was started on a SQLite file that a running one serves. */
export class DatabaseInUseError extends Error {}

export type SqliteServerLock = { release(): void };

/**
 * Claims a SQLite file for this server process. SQLite serialises writers, but the server relies
 * on being the only process that serves a file (one connection, claims serialised in memory).
 *
 * The claim is an exclusive transaction, never committed, on a small SQLite database beside the
 * file (`<file>.server-lock`): SQLite holds it with an OS file lock, which the kernel drops when
 * the process ends however it ends, so a crashed or killed server leaves nothing that blocks the
 * next one. The admin tool does not take it (it is short-lived and its writes wait on the busy
 * timeout like any other writer), so it keeps working beside a running server.
 */
export function lockSqliteFile(path: string): SqliteServerLock | undefined {
  if (path === ':memory:') return undefined;
  const lockPath = `${path}.server-lock`;
  mkdirSync(dirname(lockPath), { recursive: true });
  const db = new DatabaseSync(lockPath);
  try {
    db.exec('pragma busy_timeout = 0');
    db.exec('begin exclusive');
  } catch (error) {
    db.close();
    if (sqlitePrimaryCode(error) === SQLITE_BUSY) {
      throw new DatabaseInUseError(
        `the SQLite database ${path} is in use by another Loupe server process (it holds ${lockPath}); ` +
          'a SQLite file serves one server process: stop the other one, or use PostgreSQL to run several',
      );
    }
    throw error;
  }
  return {
    release() {
      if (!db.isOpen) return;
      db.exec('rollback');
      db.close();
    },
  };
}
