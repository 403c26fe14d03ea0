import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export type Backend = 'sqlite' | 'postgresql';
export const BACKENDS: Backend[] = ['sqlite', 'postgresql'];

export const postgresAvailable = Boolean(process.env.TEST_DATABASE_URL);

export type TestDatabase = { url: string; drop(): Promise<void> };

/** A database nobody else uses: SQLite in a new temp folder, or a new PostgreSQL database. */
export async function freshDatabase(backend: Backend): Promise<TestDatabase> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'loupe-test-'));
    return { url: `sqlite:${join(dir, 'loupe.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) throw new Error('TEST_DATABASE_URL is unset');
  const name = `loupe_test_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await withClient(admin, (client) => client.query(`create database ${name}`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => withClient(admin, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}

export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
