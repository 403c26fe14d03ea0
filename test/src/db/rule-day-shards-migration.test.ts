import { openDatabase, sql, sqlRows, sqlRun, unitOfWork } from '@loupe/server';
import { afterAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';

// Migration0020RuleDayShards splits a rule's counts of a day into shards: the counts stored
// before it become shard 0 (the row a capped rule counts in), and a rule's stats stay their sums.

describeEachBackend('Migration0020RuleDayShards', (backend) => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    for (const database of databases) await database.drop();
  });

  it('keeps the counts stored before it, in shard 0, and takes other shards of the same day after it', async () => {
    const database = await freshDatabase(backend);
    databases.push(database);
    const orm = await openDatabase(database.url, 1, { migrateNow: false });
    try {
      const em = unitOfWork(orm);
      await orm.migrator.up({ to: 'Migration0019WebhookPayloadCompression' });
      const now = backend === 'sqlite' ? sql`${Date.now()}` : sql`now()`;
      await sqlRun(em, sql`insert into users (id, username, created_at) values ('u1', 'alice', ${now})`);
      await sqlRun(em, sql`insert into entities values ('acme', ${now})`);
      await sqlRun(em, sql`insert into projects values ('acme/p', 'acme', 'p', ${now})`);
      await sqlRun(em, sql`insert into annotation_queues (id, project_id, name, scorer_refs, annotations_per_item, lease_seconds, created_at, created_by, updated_at)
        values ('q1', 'acme/p', 'q', '[]', 1, 300, ${now}, 'u1', ${now})`);
      await sqlRun(em, sql`insert into queue_rules (id, project_id, queue_id, name, trigger, filter, sample_rate, enabled, created_by, created_at, updated_at,
          backfill_considered, backfill_added, backfill_failures)
        values ('r1', 'acme/p', 'q1', 'r', 'call', '{}', 1, true, 'u1', ${now}, ${now}, 0, 0, 0)`);
      await sqlRun(em, sql`insert into queue_rule_days (rule_id, day, considered, matched, sampled_out, capped, added, last_added_at)
        values ('r1', '2026-11-27', 40, 30, 10, 5, 15, ${now}), ('r1', '2026-11-28', 4, 3, 1, 0, 2, null)`);

      await orm.migrator.up();
      await sqlRun(em, sql`insert into queue_rule_days (rule_id, day, shard, considered, matched, sampled_out, capped, added, last_added_at)
        values ('r1', '2026-11-28', 3, 1, 1, 0, 0, 1, ${now})`);

      const rows = await sqlRows<Record<string, number | string | null>>(em,
        sql`select day, shard, considered, matched, sampled_out, capped, added from queue_rule_days order by day, shard`);
      expect(rows.map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, key === 'day' ? value : Number(value)])))).toEqual([
        { day: '2026-11-27', shard: 0, considered: 40, matched: 30, sampled_out: 10, capped: 5, added: 15 },
        { day: '2026-11-28', shard: 0, considered: 4, matched: 3, sampled_out: 1, capped: 0, added: 2 },
        { day: '2026-11-28', shard: 3, considered: 1, matched: 1, sampled_out: 0, capped: 0, added: 1 },
      ]);
    } finally {
      await orm.close(true);
    }
  });
});
