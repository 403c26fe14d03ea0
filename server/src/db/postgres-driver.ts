import type { Configuration } from '@mikro-orm/core';
import { PostgreSqlConnection, PostgreSqlDriver } from '@mikro-orm/postgresql';
import pg from 'pg';
import { transactionSafe } from './transaction-safe-driver.ts';

/** The message of pg's error when `query_timeout` passes without an answer from the server. */
export const QUERY_READ_TIMEOUT = 'Query read timeout';

/**
 * The pool's connection class. When a statement gets no answer within the client-side limit
 * (`query_timeout`: the server is paused or the network drops packets), pg fails the query but
 * keeps the connection, with that statement still pending on it: every later query on it would
 * queue behind, and an abandoned transaction could stay open on the server. This connection ends
 * itself instead (pg's `end()` destroys the socket while a query is pending), and the pool, which
 * does not take back a client that is ending, opens a fresh one when it needs one.
 */
export class SelfClosingClient extends pg.Client {
  override query(...args: any[]): any {
    const result: unknown = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if (error instanceof Error && error.message === QUERY_READ_TIMEOUT) this.end().catch(() => undefined);
      });
    }
    return result;
  }
}

/** MikroORM's PostgreSQL connection, its Kysely dialect made safe for failing transactions. */
class LoupePostgreSqlConnection extends PostgreSqlConnection {
  override createKyselyDialect(overrides: pg.PoolConfig): ReturnType<PostgreSqlConnection['createKyselyDialect']> {
    return transactionSafe(super.createKyselyDialect(overrides)) as ReturnType<PostgreSqlConnection['createKyselyDialect']>;
  }
}

/** MikroORM's PostgreSQL driver over LoupePostgreSqlConnection (see transaction-safe-driver.ts). */
export class LoupePostgreSqlDriver extends PostgreSqlDriver {
  constructor(config: Configuration) {
    super(config);
    // The base class made its own connection (not yet connected); this one replaces it.
    (this as unknown as { connection: PostgreSqlConnection }).connection = new LoupePostgreSqlConnection(this.config);
  }
}
