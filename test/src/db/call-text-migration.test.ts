import { callFilterConditions, openDatabase, sql, sqlRows, sqlRun, unitOfWork } from '@loupe/server';
import { afterAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';

// Migration0011CallText makes the calls stored before it searchable (CallFilter.text), and the
// calls stored after it through the SQLite trigger or the PostgreSQL expression index;
// Migration0013CallFilterIndexes remakes SQLite's index keyed by rowid and stores PostgreSQL's
// vectors, for the calls stored before it too.

describeEachBackend('Migration0011CallText', (backend) => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    for (const database of databases) await database.drop();
  });

  it('indexes the calls stored before it, and those stored after it', async () => {
    const database = await freshDatabase(backend);
    databases.push(database);
    const orm = await openDatabase(database.url, 1, { migrateNow: false });
    try {
      const em = unitOfWork(orm);
      await orm.migrator.up({ to: 'Migration0010ServerSecrets' });
      const now = backend === 'sqlite' ? sql`${Date.now()}` : sql`now()`;
      const hash = 'a'.repeat(64);
      await sqlRun(em, sql`insert into users values ('u1', 'alice', ${now})`);
      await sqlRun(em, sql`insert into entities values ('acme', ${now})`);
      await sqlRun(em, sql`insert into projects values ('acme/p', 'acme', 'p', ${now})`);
      const insert = (id: string, inputs: unknown, output: unknown) =>
        sqlRun(em, sql`insert into calls (project_id, id, trace_id, op_name, started_at, inputs, output, request_hash, created_at, created_by)
          values ('acme/p', ${id}, 't', 'chat', ${now}, ${JSON.stringify(inputs)}, ${JSON.stringify(output)}, ${hash}, ${now}, 'u1')`);
      await insert('before', { q: 'Stored Before the index' }, 'old answer');
      await insert('other', { q: 'nothing here' }, null);

      await orm.migrator.up();
      await insert('after', { q: 'stored after' }, { a: ['new answer'] });

      const search = async (text: string) => {
        const where = sql.join([sql`project_id = ${'acme/p'}`, ...callFilterConditions(em, { text })], ' and ');
        return (await sqlRows<{ id: string }>(em, sql`select id from calls where ${where} order by id`)).map((row) => row.id);
      };
      expect(await search('before')).toEqual(['before']);
      expect(await search('ANSWER')).toEqual(['after', 'before']);
      expect(await search('stored')).toEqual(['after', 'before']);
      expect(await search('new answer')).toEqual(['after']);
      expect(await search('absent')).toEqual([]);

      if (backend === 'sqlite') {
        // SQLite's text index names a call by its rowid (Migration0013CallFilterIndexes). VACUUM
        // keeps the rowids of a table with indexes; leave gaps in the rowids, as a failed batch
        // or a future delete would, and VACUUM: every word still finds its own call.
        for (const [n, word] of ['alpha', 'beta', 'gamma', 'delta'].entries()) await insert(`v${n}`, { q: `vacuum ${word}` }, null);
        await sqlRun(em, sql`delete from calls where id in ('v1', 'other')`);
        await sqlRun(em, sql`vacuum`);
        expect(await search('gamma')).toEqual(['v2']);
        expect(await search('delta')).toEqual(['v3']);
        expect(await search('vacuum')).toEqual(['v0', 'v2', 'v3']);
        expect(await search('before')).toEqual(['before']);
      }
    } finally {
      await orm.close(true);
    }
  });
});
