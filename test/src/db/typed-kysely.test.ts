import { openDatabase, sql, sqlRows, typedKysely, unitOfWork, type Orm } from '@loupe/server';
import { AnnotationQueueRecord, EntityRecord, Project, User } from '../../../server/src/db/entities.ts';
import { isoFromSql, jsonFromSql } from '../../../server/src/db/sql.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';

// typedKysely converts values as the entities declare them (MikroORM's Kysely plugin with
// convertValues): SQLite stores datetimes as epoch milliseconds and JSON as text, PostgreSQL as
// timestamptz and jsonb. Rows it reads and writes must be what the unit of work reads and writes.

describeEachBackend('typedKysely', (backend) => {
  let database: TestDatabase;
  let orm: Orm;
  const createdAt = new Date('2026-11-02T09:00:00.123Z');
  const updatedAt = new Date('2026-11-03T10:30:00.456Z');
  beforeAll(async () => {
    database = await freshDatabase(backend);
    orm = await openDatabase(database.url, 2);
    const em = unitOfWork(orm);
    // One flush per table: the entities declare no relations, so the unit of work does not order them by foreign key.
    for (const create of [
      () => em.create(User, { id: 'u1', username: 'one', createdAt }),
      () => em.create(EntityRecord, { name: 'e', createdAt }),
      () => em.create(Project, { id: 'e/p', entity: 'e', name: 'p', createdAt }),
    ]) {
      create();
      await em.flush();
    }
    em.create(AnnotationQueueRecord, {
      id: 'q-orm',
      projectId: 'e/p',
      name: 'written by the unit of work',
      description: null,
      scorerRefs: ['svc:///e/p/object/a:1', 'svc:///e/p/object/b:2'],
      annotationsPerItem: 2,
      leaseSeconds: 60,
      access: 'open',
      overlapCoverage: 1,
      createdAt,
      createdBy: 'u1',
      updatedAt,
      deletedAt: null,
    });
    await em.flush();
  });
  afterAll(async () => {
    await orm?.close(true);
    await database?.drop();
  });

  it('reads dates as Date and JSON parsed, as the unit of work does', async () => {
    const row = await typedKysely(unitOfWork(orm)).selectFrom('annotation_queues').selectAll().where('id', '=', 'q-orm').executeTakeFirstOrThrow();
    const entity = await unitOfWork(orm).findOneOrFail(AnnotationQueueRecord, { id: 'q-orm' });
    expect(row.created_at).toBeInstanceOf(Date);
    expect(row.created_at.toISOString()).toBe(createdAt.toISOString());
    expect(row.updated_at.toISOString()).toBe(entity.updatedAt.toISOString());
    expect(row.deleted_at).toBeNull();
    expect(row.scorer_refs).toEqual(entity.scorerRefs);
    expect(row.annotations_per_item).toBe(2);
    // The same values the `sql` template's rows give through the conversions of db/sql.ts.
    const [raw] = await sqlRows<{ created_at: unknown; scorer_refs: unknown; annotations_per_item: number }>(
      unitOfWork(orm),
      sql`select created_at, scorer_refs, annotations_per_item from annotation_queues where id = ${'q-orm'}`,
    );
    expect(isoFromSql(raw!.created_at)).toBe(row.created_at.toISOString());
    expect(jsonFromSql(raw!.scorer_refs)).toEqual(row.scorer_refs);
    expect(raw!.annotations_per_item).toBe(row.annotations_per_item);
  });

  it('binds a Date in a condition as the database stores it', async () => {
    const kysely = typedKysely(unitOfWork(orm));
    const before = await kysely.selectFrom('annotation_queues').select('id').where('created_at', '<', new Date(createdAt.getTime() + 1)).execute();
    const after = await kysely.selectFrom('annotation_queues').select('id').where('created_at', '>', createdAt).execute();
    expect(before.map((row) => row.id)).toEqual(['q-orm']);
    expect(after).toEqual([]);
  });

  it('writes dates and JSON as the unit of work writes them', async () => {
    const refs = ['svc:///e/p/object/c:3'];
    await typedKysely(unitOfWork(orm))
      .insertInto('annotation_queues')
      .values({
        id: 'q-kysely',
        project_id: 'e/p',
        name: 'written by typed Kysely',
        description: 'd',
        scorer_refs: refs,
        annotations_per_item: 1,
        lease_seconds: 900,
        access: 'open',
        overlap_coverage: 1,
        created_at: createdAt,
        created_by: 'u1',
        updated_at: createdAt,
        deleted_at: null,
      })
      .execute();
    await typedKysely(unitOfWork(orm)).updateTable('annotation_queues').set({ updated_at: updatedAt, scorer_refs: [...refs, 'x'] }).where('id', '=', 'q-kysely').execute();
    const entity = await unitOfWork(orm).findOneOrFail(AnnotationQueueRecord, { id: 'q-kysely' });
    expect(entity.createdAt.toISOString()).toBe(createdAt.toISOString());
    expect(entity.updatedAt.toISOString()).toBe(updatedAt.toISOString());
    expect(entity.scorerRefs).toEqual([...refs, 'x']);
    // Stored alike: the same raw values as the row the unit of work wrote.
    const raw = await sqlRows<{ id: string; updated_at: unknown; scorer_refs: unknown }>(
      unitOfWork(orm),
      sql`select id, updated_at, scorer_refs from annotation_queues where id in (${sql.list(['q-orm', 'q-kysely'])}) order by id`,
    );
    expect(raw[0]!.updated_at).toEqual(raw[1]!.updated_at);
    expect(typeof raw[0]!.scorer_refs).toBe(typeof raw[1]!.scorer_refs);
  });
});
