import { openDatabase, sql, sqlRows, unitOfWork, type Orm } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { entitySchema, postgresSchema, sqliteSchema } from '../harness/schema-facts.ts';

// The entities (server/src/db/entities.ts) are the code's one definition of the schema; the
// migrations of each database make it. A database migrated with the project's migrations is read
// back, reduced to one line per fact (column with its kind and nullability, primary key, index),
// and must hold exactly the lines the entities give on that dialect: a table, column, key or
// index added to one and not the other fails here.

describeEachBackend('the entities describe the schema the migrations make', (backend) => {
  let database: TestDatabase;
  let orm: Orm;
  let catalog: string[];
  let entities: string[];

  beforeAll(async () => {
    database = await freshDatabase(backend);
    orm = await openDatabase(database.url, 1);
    const em = unitOfWork(orm);
    catalog = backend === 'sqlite' ? await sqliteSchema(em) : await postgresSchema(em);
    entities = entitySchema(orm, backend);
  });
  afterAll(async () => {
    await orm?.close(true);
    await database?.drop();
  });

  it('reads both sides (a reader that found nothing would make them equal)', () => {
    for (const lines of [catalog, entities]) {
      expect(lines).toContain('feedback primary key (project_id, id)');
      expect(lines).toContain('annotation_queue_items unique index annotation_queue_items_call_uq (queue_id, call_id) where deleted_at is null');
      expect(lines).toContain('api_keys unique constraint (key_hash)');
      expect(lines).toContain('calls.ended_at: timestamp null');
    }
  });

  it('has every table, column kind, nullability, primary key and index of the migrations, and nothing else', () => {
    const drift = {
      onlyInEntities: entities.filter((line) => !catalog.includes(line)).sort(),
      onlyInMigrations: catalog.filter((line) => !entities.includes(line)).sort(),
    };
    expect(drift, 'the entities and the migrations disagree').toEqual({ onlyInEntities: [], onlyInMigrations: [] });
  });

  it('has the full-text search of calls its dialect makes, which the entities cannot declare (DIALECT_ONLY_INDEXES, DIALECT_ONLY_COLUMNS)', async () => {
    const em = unitOfWork(orm);
    const found =
      backend === 'sqlite'
        ? await sqlRows<{ name: string }>(em, sql`select name from sqlite_master where name in ('calls_text', 'calls_text_insert') order by name`)
        : await sqlRows<{ name: string }>(
            em,
            sql`select indexname as name from pg_indexes where tablename = 'calls' and indexname = 'calls_text_idx' and indexdef like '%USING gin (text_vector)%'
                union all select column_name from information_schema.columns
                 where table_name = 'calls' and column_name = 'text_vector' and is_generated = 'ALWAYS' and data_type = 'tsvector'`,
          );
    expect(found.map((row) => row.name)).toEqual(backend === 'sqlite' ? ['calls_text', 'calls_text_insert'] : ['calls_text_idx', 'text_vector']);
  });
});
