import { unitOfWork, openDatabase, PostgresFailureCounts, sql, sqlRows, sqlRun, type Em, type Orm } from '@loupe/server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freshDatabase, postgresAvailable, type TestDatabase } from '../harness/databases.ts';

// The brake's shared counts on PostgreSQL (SQLite counts in memory: see unit/auth-brake.test.ts).
const NAME = 'failed-authentication counts on PostgreSQL';

(postgresAvailable ? describe : describe.skip)(postgresAvailable ? NAME : `${NAME} — SKIPPED: TEST_DATABASE_URL is unset`, () => {
  let database: TestDatabase;
  let orm: Orm;
  let em: Em;
  beforeAll(async () => {
    database = await freshDatabase('postgresql');
    orm = await openDatabase(database.url, 8);
    em = unitOfWork(orm);
  });
  afterAll(async () => {
    await orm?.close(true);
    await database?.drop();
  });

  beforeEach(() => sqlRun(em, sql`delete from auth_failures`));

  const rows = () => sqlRows<{ client: string; failures: number }>(em, sql`select client, failures from auth_failures order by client`);

  it('deletes the rows of ended windows when it counts, at most once a minute per process', async () => {
    const counts = new PostgresFailureCounts(em, 60_000);
    await sqlRun(em, sql`insert into auth_failures values ('ended', 7, now() - interval '1 second'), ('open', 3, now() + interval '30 seconds')`);
    expect(await counts.add('new')).toEqual({ failures: 1, secondsLeft: 60 });
    expect(await rows()).toEqual([{ client: 'new', failures: 1 }, { client: 'open', failures: 3 }]);
    // Within the minute, no second sweep: one more ended row stays until the next one.
    await sqlRun(em, sql`insert into auth_failures values ('ended2', 2, now() - interval '1 second')`);
    await counts.add('new');
    expect((await rows()).map((row) => row.client)).toEqual(['ended2', 'new', 'open']);
    expect(await counts.current('ended2')).toBe(0);
  });

  it('restarts a window that has ended, and keeps the end of an open one', async () => {
    const counts = new PostgresFailureCounts(em, 60_000);
    await counts.add('a');
    await sqlRun(em, sql`update auth_failures set window_ends = now() + interval '12 seconds' where client = 'a'`);
    expect(await counts.add('a')).toEqual({ failures: 2, secondsLeft: 12 });
    await sqlRun(em, sql`update auth_failures set window_ends = now() - interval '1 millisecond' where client = 'a'`);
    expect(await counts.current('a')).toBe(0);
    expect(await counts.add('a')).toEqual({ failures: 1, secondsLeft: 60 });
    expect(await rows()).toEqual([{ client: 'a', failures: 1 }]);
  });

  it('counts concurrent failures exactly (one atomic upsert each)', async () => {
    const counts = [new PostgresFailureCounts(unitOfWork(orm), 60_000), new PostgresFailureCounts(unitOfWork(orm), 60_000)];
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => counts[i % 2]!.add('busy')));
    expect(results.map((r) => r.failures).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(await rows()).toEqual([{ client: 'busy', failures: 40 }]);
  });
});
