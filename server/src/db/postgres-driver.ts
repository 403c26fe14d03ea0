import { EntityManagerType, type Configuration } from '@mikro-orm/core';
import { PostgreSqlConnection, PostgreSqlPlatform } from '@mikro-orm/postgresql';
import { AbstractSqlDriver, BasePostgreSqlEntityManager } from '@mikro-orm/sql';
import type { PostgresDialect } from 'kysely';
import type pg from 'pg';
import { transactionSafe } from './transaction-safe-driver.ts';

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
