import { MikroORM, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { SqliteDriver, type AbstractSqlDriver, type SqlEntityManager } from '@mikro-orm/sql';
import { entitiesOf } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { LoupePostgreSqlDriver } from './postgres-driver.ts';
import { SelfClosingClient } from './self-closing-client.ts';
import { LoupeSqliteDialect } from './sqlite-dialect.ts';
import { enableTypedKysely } from './sql.ts';
import type { DatabaseTimeouts } from '../config.ts';

export type Dialect = 'sqlite' | 'postgresql';
/** The ORM over either SQL driver: its entity managers are SQL ones (query builder, Kysely). */
export type Orm = MikroORM<AbstractSqlDriver>;
/** A MikroORM entity manager: a unit of work (identity map, flush), or its transaction. */
export type Em = SqlEntityManager;

/** A fresh unit of work for one request or command. */
export function unitOfWork(orm: Orm): Em {
  return orm.em.fork();
}

export function dialectOf(databaseUrl: string): Dialect {
  return databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgresql';
}

/**
 * Bounds on waiting for PostgreSQL (SQLite has its busy timeout). `connectMs` bounds opening a
 * connection and waiting for a free one in the pool. `statementMs` is the server's
 * statement_timeout; the client gives up on an answer one second later (the server did not
 * answer at all). `idleInTransactionMs` ends a session the server sees idle inside a transaction
 * (a stalled process holding locks). The admin tool leaves the last two unset: its commands, a
 * migration among them, may take as long as they need.
 */

export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** How much longer than statement_timeout the client waits before it stops waiting for the server. */
const CLIENT_GRACE_MS = 1_000;

function postgresDriverOptions(timeouts: DatabaseTimeouts): Record<string, unknown> {
  return {
    Client: SelfClosingClient,
    connectionTimeoutMillis: timeouts.connectMs,
    ...(timeouts.statementMs ? { statement_timeout: timeouts.statementMs, query_timeout: timeouts.statementMs + CLIENT_GRACE_MS } : {}),
    ...(timeouts.idleInTransactionMs ? { idle_in_transaction_session_timeout: timeouts.idleInTransactionMs } : {}),
  };
}

function optionsFor(databaseUrl: string, poolSize: number, timeouts: DatabaseTimeouts): Partial<Options<AbstractSqlDriver>> {
  const common = {
    entities: entitiesOf(dialectOf(databaseUrl)),
    extensions: [Migrator],
    migrations: { migrationsList: migrations[dialectOf(databaseUrl)], transactional: true, allOrNothing: true, silent: true, snapshot: false },
    discovery: { warnWhenNoEntities: false },
    debug: false,
    allowGlobalContext: false,
  } satisfies Partial<Options>;
  if (dialectOf(databaseUrl) === 'sqlite') {
    const path = databaseUrl.slice('sqlite:'.length);
    return { ...common, driver: SqliteDriver, dbName: path, driverOptions: new LoupeSqliteDialect(path) };
  }
  return {
    ...common,
    driver: LoupePostgreSqlDriver,
    clientUrl: databaseUrl,
    pool: { min: 0, max: poolSize },
    driverOptions: postgresDriverOptions(timeouts),
  };
}

export type OpenOptions = { migrateNow?: boolean; timeouts?: DatabaseTimeouts };

/** Opens the database and, unless told otherwise, brings its schema up to date. */
export async function openDatabase(
  databaseUrl: string,
  poolSize = 10,
  { migrateNow = true, timeouts = { connectMs: DEFAULT_CONNECT_TIMEOUT_MS } }: OpenOptions = {},
): Promise<Orm> {
  const orm = await MikroORM.init(optionsFor(databaseUrl, poolSize, timeouts));
  enableTypedKysely(orm.em);
  if (migrateNow) await migrate(orm);
  return orm;
}

export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((migration) => migration.name);
}
