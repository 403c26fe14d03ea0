import { MikroORM, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { SqliteDriver, type SqlEntityManager } from '@mikro-orm/sql';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';
import { LoupeSqliteDialect } from './sqlite-dialect.ts';

export type Dialect = 'sqlite' | 'postgresql';
export type Orm = MikroORM;
/** The SQL entity manager every domain function takes (query builder included). */
export type Em = SqlEntityManager;

/** A fresh unit of work for one request or command. */
export function forkEm(orm: Orm): Em {
  return orm.em.fork() as unknown as Em;
}

export function dialectOf(databaseUrl: string): Dialect {
  return databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgresql';
}

function optionsFor(databaseUrl: string, poolSize: number): Options {
  const common = {
    entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations[dialectOf(databaseUrl)], transactional: true, allOrNothing: true, silent: true, snapshot: false },
    discovery: { warnWhenNoEntities: false },
    debug: false,
    allowGlobalContext: false,
  } satisfies Partial<Options>;
  if (dialectOf(databaseUrl) === 'sqlite') {
    const path = databaseUrl.slice('sqlite:'.length);
    return { ...common, driver: SqliteDriver, dbName: path, driverOptions: new LoupeSqliteDialect(path) } as unknown as Options;
  }
  return { ...common, driver: PostgreSqlDriver, clientUrl: databaseUrl, pool: { min: 0, max: poolSize } } as unknown as Options;
}

/** Opens the database and, unless told otherwise, brings its schema up to date. */
export async function openDatabase(databaseUrl: string, poolSize = 10, { migrateNow = true } = {}): Promise<Orm> {
  const orm = await MikroORM.init(optionsFor(databaseUrl, poolSize));
  if (migrateNow) await migrate(orm);
  return orm;
}

export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((migration) => migration.name);
}
