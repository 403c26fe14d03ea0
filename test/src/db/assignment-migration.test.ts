import { createHash } from 'node:crypto';
import { openDatabase, sql, sqlRows, sqlRun, unitOfWork } from '@loupe/server';
import { afterAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';

// Migration0014AssignmentOverlap on a database made before it: the items it finds get the coverage
// point the server computes for new ones (on PostgreSQL in SQL, on SQLite in the migration's own
// code), memberships are kept and take the annotator role, queues are open with coverage 1, and
// an item written without a coverage point is refused on both databases.

const pointOf = (id: string) => parseInt(createHash('sha256').update(id).digest('hex').slice(0, 13), 16) / 2 ** 52;

describeEachBackend('Migration0014AssignmentOverlap', (backend) => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    for (const database of databases) await database.drop();
  });

  it('computes the coverage point of the items stored before it, keeps memberships, and refuses an item without a point', async () => {
    const database = await freshDatabase(backend);
    databases.push(database);
    const orm = await openDatabase(database.url, 1, { migrateNow: false });
    try {
      const em = unitOfWork(orm);
      await orm.migrator.up({ to: 'Migration0011CallText' });
      const now = backend === 'sqlite' ? sql`${Date.now()}` : sql`now()`;
      await sqlRun(em, sql`insert into users values ('u1', 'alice', ${now})`);
      await sqlRun(em, sql`insert into entities values ('acme', ${now})`);
      await sqlRun(em, sql`insert into memberships values ('u1', 'acme', 'viewer', ${now})`);
      await sqlRun(em, sql`insert into projects values ('acme/p', 'acme', 'p', ${now})`);
      await sqlRun(em, sql`insert into annotation_queues (id, project_id, name, scorer_refs, annotations_per_item, lease_seconds, created_at, created_by, updated_at)
        values ('q1', 'acme/p', 'q', '[]', 3, 900, ${now}, 'u1', ${now})`);
      // Ids of every shape an item may have had; more than one chunk of the SQLite migration's reads.
      const ids = ['0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'item-1', 'Ünïcode-ïd', ...Array.from({ length: 1100 }, (_, n) => `i${String(n).padStart(5, '0')}`)];
      for (let start = 0; start < ids.length; start += 200) {
        const rows = ids.slice(start, start + 200).map((id) => sql`(${id}, 'acme/p', 'q1', ${`call-${id}`}, ${now}, 'chat', 't', '[]', 'u1', ${now}, 'u1', ${now})`);
        await sqlRun(em, sql`insert into annotation_queue_items (id, project_id, queue_id, call_id, call_started_at, call_op_name, call_trace_id, display_fields, added_by, created_at, created_by, updated_at)
          values ${sql.join(rows, ', ')}`);
      }

      await orm.migrator.up();
      const points = await sqlRows<{ id: string; coverage_point: number }>(em, sql`select id, coverage_point from annotation_queue_items`);
      expect(points).toHaveLength(ids.length);
      for (const { id, coverage_point } of points) expect(coverage_point, id).toBe(pointOf(id));
      expect(await sqlRows(em, sql`select access, overlap_coverage from annotation_queues`)).toEqual([{ access: 'open', overlap_coverage: 1 }]);
      expect(await sqlRows(em, sql`select user_id, entity, role from memberships`)).toEqual([{ user_id: 'u1', entity: 'acme', role: 'viewer' }]);

      await sqlRun(em, sql`update memberships set role = 'annotator' where user_id = 'u1'`);
      await expect(sqlRun(em, sql`update memberships set role = 'owner' where user_id = 'u1'`)).rejects.toThrow();
      await expect(sqlRun(em, sql`insert into annotation_queue_items (id, project_id, queue_id, call_id, call_started_at, call_op_name, call_trace_id, display_fields, added_by, created_at, created_by, updated_at)
          values ('late', 'acme/p', 'q1', 'call-late', ${now}, 'chat', 't', '[]', 'u1', ${now}, 'u1', ${now})`)).rejects.toThrow();
      await expect(sqlRun(em, sql`update annotation_queues set overlap_coverage = 0 where id = 'q1'`)).rejects.toThrow();
      await expect(sqlRun(em, sql`update annotation_queues set access = 'closed' where id = 'q1'`)).rejects.toThrow();
    } finally {
      await orm.close(true);
    }
  });
});
