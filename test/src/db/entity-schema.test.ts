import { openDatabase, unitOfWork, type Orm } from '@loupe/server';
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
});
