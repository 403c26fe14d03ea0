import { callFilterConditions, openDatabase, sql, sqlRows, sqlRun, unitOfWork } from '@loupe/server';
import { afterAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';

// Migration0011CallText makes the calls stored before it searchable (CallFilter.text), and the
// calls stored after it through the SQLite trigger or the PostgreSQL expression index.

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
    } finally {
      await orm.close(true);
    }
  });
});
