import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';

// Many annotators for the write benchmarks, written straight into the database during set-up: the
// admin tool makes one user per process start, far too slow for thousands. The rows are the ones
// the admin tool writes (users, api_keys with the SHA-256 hex of the key, memberships); the entity
// must exist already (the benchmark's first user, made with the admin tool, creates it).

export type Annotator = { id: string; username: string; key: string };
/** What annotators are made with besides a key: a password hash (argon2id, made once) to sign in with. */
export type AnnotatorOptions = { passwordHash?: string };

const ROWS_PER_STATEMENT = 500;

function newAnnotator(prefix: string, n: number): Annotator & { hash: string } {
  const key = `lp_${randomBytes(32).toString('base64url')}`;
  return { id: randomUUID(), username: `${prefix}-${n}`, key, hash: createHash('sha256').update(key, 'utf8').digest('hex') };
}

export async function insertAnnotators(databaseUrl: string, entity: string, prefix: string, from: number, count: number, options: AnnotatorOptions = {}): Promise<Annotator[]> {
  const made = Array.from({ length: count }, (_, n) => newAnnotator(prefix, from + n));
  const tables = [users(options.passwordHash ?? null), API_KEYS, membership(entity)];
  if (databaseUrl.startsWith('sqlite:')) insertSqlite(databaseUrl.slice('sqlite:'.length), tables, made);
  else await insertPostgres(databaseUrl, tables, made);
  return made.map(({ id, username, key }) => ({ id, username, key }));
}

type Row = Annotator & { hash: string };
type Table = { name: string; columns: string; values: (row: Row, at: unknown) => unknown[] };

const users = (passwordHash: string | null): Table => ({
  name: 'users',
  columns: 'id, username, password_hash, created_at',
  values: (row, at) => [row.id, row.username, passwordHash, at],
});
const API_KEYS: Table = { name: 'api_keys', columns: 'id, user_id, key_hash, created_at, revoked_at', values: (row, at) => [randomUUID(), row.id, row.hash, at, null] };
const membership = (entity: string): Table => ({
  name: 'memberships',
  columns: 'user_id, entity, role, created_at',
  values: (row, at) => [row.id, entity, 'member', at],
});

function insertSqlite(path: string, tables: Table[], rows: Row[]): void {
  const db = new DatabaseSync(path);
  try {
    db.exec('pragma busy_timeout = 5000');
    db.exec('begin immediate');
    const at = Date.now(); // SQLite datetime columns hold epoch milliseconds, as MikroORM writes them
    for (const table of tables) {
      const width = table.columns.split(',').length;
      const one = `(${Array.from({ length: width }, () => '?').join(', ')})`;
      const insert = db.prepare(`insert into ${table.name} (${table.columns}) values ${one}`);
      for (const row of rows) insert.run(...(table.values(row, at) as never[]));
    }
    db.exec('commit');
  } finally {
    db.close();
  }
}

async function insertPostgres(url: string, tables: Table[], rows: Row[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('begin');
    const at = new Date();
    for (const table of tables) {
      const width = table.columns.split(',').length;
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        const tuples = chunk.map((_, r) => `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(', ')})`);
        await client.query(`insert into ${table.name} (${table.columns}) values ${tuples.join(', ')}`, chunk.flatMap((row) => table.values(row, at)));
      }
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

export type AnnotatorPool = {
  readonly list: readonly Annotator[];
  /** Makes sure at least `count` annotators exist (inserted straight into the database). */
  ensure(count: number): Promise<void>;
};

/** Annotators of one database, made on demand and numbered in order of creation. */
export function annotatorPool(databaseUrl: string, entity: string, options: AnnotatorOptions = {}): AnnotatorPool {
  const list: Annotator[] = [];
  return {
    list,
    async ensure(count) {
      if (list.length >= count) return;
      list.push(...(await insertAnnotators(databaseUrl, entity, 'annotator', list.length, count - list.length, options)));
    },
  };
}
