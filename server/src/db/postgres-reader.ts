import pg from 'pg';
import { SelfClosingClient } from './self-closing-client.ts';
import type { Statement } from './statement.ts';
import type { StatementReader } from './statement-reader.ts';

/**
 * How the server's own pool reaches PostgreSQL, as plain values a worker thread can be handed
 * (sql.ts's postgresConnectionOf): its URL, and the pool's numeric settings as orm.ts gives them
 * to pg (its time limits: connectionTimeoutMillis, statement_timeout, query_timeout, …).
 */
export type PostgresConnection = { url: string; limits: Record<string, number> };

/** A connection left unused this long is closed: a thread that reads now and then holds none between. */
const IDLE_MS = 5_000;

/**
 * Reads through a pool of its own (agreement's reading threads), with the server's time limits
 * (orm.ts). Two connections: a spec is read through a cursor in a transaction while its queue's
 * items are looked up beside it.
 */
export function openPostgresReader(connection: PostgresConnection): StatementReader & { close(): Promise<void> } {
  const pool = new pg.Pool({ ...connection.limits, connectionString: connection.url, Client: SelfClosingClient, max: 2, idleTimeoutMillis: IDLE_MS, allowExitOnIdle: true });
  // An idle connection the server ended (a restart, a dropped database) is dropped by the pool; the next read opens another.
  pool.on('error', () => undefined);
  const on = (client: pg.Pool | pg.PoolClient): StatementReader => ({
    dialect: 'postgresql',
    rows: async <T>(statement: Statement) => (await client.query(statement.text('postgresql'), statement.params as unknown[])).rows as T[],
    arrays: async (statement) => (await client.query({ text: statement.text('postgresql'), values: statement.params as unknown[], rowMode: 'array' })).rows as unknown[][],
    readOnly: async (work) => {
      const held = await pool.connect();
      try {
        await held.query('begin transaction read only');
        const result = await work(on(held));
        await held.query('commit');
        held.release();
        return result;
      } catch (error) {
        // The connection is closed, not returned: its transaction may still be open.
        held.release(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }
    },
  });
  return { ...on(pool), close: () => pool.end() };
}
