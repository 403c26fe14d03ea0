import { EntityManagerType, type Configuration } from '@mikro-orm/core';
import { PostgreSqlConnection, PostgreSqlPlatform } from '@mikro-orm/postgresql';
import { AbstractSqlDriver, BasePostgreSqlEntityManager } from '@mikro-orm/sql';
import type { PostgresDialect } from 'kysely';
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
  override createKyselyDialect(overrides: pg.PoolConfig): PostgresDialect {
    // The cast answers a declaration that is narrower than its use: PostgreSqlConnection declares
    // this method to return Kysely's PostgresDialect, while its only caller, AbstractSqlConnection,
    // declares and takes any Kysely Dialect (MaybePromise<Dialect>), which the wrapper is.
    return transactionSafe(super.createKyselyDialect(overrides)) as PostgresDialect;
  }
}

/**
 * MikroORM's PostgreSQL driver over LoupePostgreSqlConnection (see transaction-safe-driver.ts).
 * Built the way MikroORM's own PostgreSqlDriver is (AbstractSqlDriver takes the connection class,
 * replicas included), since that driver's constructor has no way to name another connection class.
 * PostgreSqlDriver adds one thing to AbstractSqlDriver, its entity manager, repeated here.
 */
export class LoupePostgreSqlDriver extends AbstractSqlDriver<LoupePostgreSqlConnection, PostgreSqlPlatform> {
  declare [EntityManagerType]: BasePostgreSqlEntityManager<this>;

  constructor(config: Configuration) {
    super(config, new PostgreSqlPlatform(), LoupePostgreSqlConnection, ['kysely', 'pg']);
  }

  override createEntityManager(useContext?: boolean): this[typeof EntityManagerType] {
    const EntityManagerClass = this.config.get('entityManager', BasePostgreSqlEntityManager);
    return new EntityManagerClass(this.config, this, this.metadata, useContext);
  }
}
