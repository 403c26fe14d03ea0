import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { unitOfWork, openDatabase, sql, sqlRows, sqlRun, sqlTransaction, type Orm } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';

// sqlTransaction is what the progress and claim paths write through. On SQLite it holds the one
// connection and runs statements on it directly, so these check what Kysely's own transaction
// gave before: all or nothing, and no statement from outside slipping into an open transaction.

describeEachBackend('sqlTransaction', (backend) => {
  let database: TestDatabase;
  let orm: Orm;
  beforeAll(async () => {
    database = await freshDatabase(backend);
    orm = await openDatabase(database.url, 4);
    await sqlRun(unitOfWork(orm), sql`create table tx_probe (id integer primary key, label text not null)`);
  });
  afterAll(async () => {
    await orm?.close(true);
    await database?.drop();
  });

  const labels = async () => (await sqlRows<{ label: string }>(unitOfWork(orm), sql`select label from tx_probe order by id`)).map((row) => row.label);

  it('commits every statement of the work together', async () => {
    const result = await sqlTransaction(unitOfWork(orm), async (tx) => {
      await sqlRun(tx, sql`insert into tx_probe (id, label) values (${1}, ${'one'})`);
      await sqlRun(tx, sql`insert into tx_probe (id, label) values (${2}, ${'two'})`);
      return sqlRows<{ n: number | string }>(tx, sql`select count(*) as n from tx_probe`);
    });
    expect(Number(result[0]!.n)).toBe(2); // the work sees its own writes
    expect(await labels()).toEqual(['one', 'two']);
  });

  it('stores nothing when the work fails after writing, and passes the error on', async () => {
    const failure = new Error('refused after the write');
    await expect(
      sqlTransaction(unitOfWork(orm), async (tx) => {
        await sqlRun(tx, sql`insert into tx_probe (id, label) values (${3}, ${'three'})`);
        await sqlRun(tx, sql`update tx_probe set label = ${'changed'} where id = ${1}`);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await labels()).toEqual(['one', 'two']);
  });

  it('stores nothing when a statement of the work fails', async () => {
    await expect(
      sqlTransaction(unitOfWork(orm), async (tx) => {
        await sqlRun(tx, sql`insert into tx_probe (id, label) values (${4}, ${'four'})`);
        await sqlRun(tx, sql`insert into tx_probe (id, label) values (${1}, ${'duplicate key'})`);
      }),
    ).rejects.toThrow();
    expect(await labels()).toEqual(['one', 'two']);
    // The connection is usable afterwards: the next transaction commits.
    await sqlTransaction(unitOfWork(orm), (tx) => sqlRun(tx, sql`insert into tx_probe (id, label) values (${5}, ${'five'})`));
    expect(await labels()).toEqual(['one', 'two', 'five']);
  });

  it('refuses to nest, and leaves the outer transaction to end as it would have', async () => {
    const nested = sqlTransaction(unitOfWork(orm), async (tx) => {
      await sqlRun(tx, sql`insert into tx_probe (id, label) values (${8}, ${'outer'})`);
      return sqlTransaction(tx, async () => 'never');
    });
    // On SQLite the scope handed to the work is the held connection: its own refusal says so.
    if (backend === 'sqlite') await expect(nested).rejects.toThrow('does not nest');
    else await expect(nested).rejects.toThrow();
    expect(await labels()).not.toContain('outer');
  });

  it('keeps statements from outside out of a transaction that waits between its statements', async () => {
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((resolve) => (inserted = resolve));
    const open = sqlTransaction(unitOfWork(orm), async (tx) => {
      await sqlRun(tx, sql`insert into tx_probe (id, label) values (${6}, ${'uncommitted'})`);
      inserted();
      await sleep(100); // other requests' work runs meanwhile
      throw new Error('rolled back');
    });
    await insertedOnce;
    // Neither sees the uncommitted row nor ends up inside the transaction that is rolled back.
    // (The read leaves out the row the write adds: on PostgreSQL the two run side by side.)
    const outsideRead = sqlRows<{ label: string }>(unitOfWork(orm), sql`select label from tx_probe where id <> 7 order by id`);
    const outsideWrite = sqlRun(unitOfWork(orm), sql`insert into tx_probe (id, label) values (${7}, ${'outside'})`);
    await expect(open).rejects.toThrow('rolled back');
    expect((await outsideRead).map((row) => row.label)).toEqual(['one', 'two', 'five']);
    expect(await outsideWrite).toBe(1);
    expect(await labels()).toEqual(['one', 'two', 'five', 'outside']);
  });

  // SQLite runs the transactions asked for in one turn of the event loop under one commit, each in
  // its own savepoint (db/sqlite-group-commit.ts): each must still be all or nothing on its own.
  it('keeps transactions asked for together all or nothing each: a failing one takes only its own writes back', async () => {
    const failure = new Error('refused after the write');
    // The third fails on a key already taken: on SQLite, the first's id, written in the same group
    // before it; on PostgreSQL, where the four run side by side on their own connections and either
    // of the two could insert id 10 first, a row committed before.
    const taken = backend === 'sqlite' ? 10 : 1;
    const outcomes = await Promise.allSettled([
      sqlTransaction(unitOfWork(orm), async (tx) => sqlRun(tx, sql`insert into tx_probe (id, label) values (${10}, ${'ten'})`)),
      sqlTransaction(unitOfWork(orm), async (tx) => {
        await sqlRun(tx, sql`insert into tx_probe (id, label) values (${11}, ${'eleven, taken back'})`);
        await sqlRun(tx, sql`update tx_probe set label = ${'changed'} where id = ${10}`);
        throw failure;
      }),
      sqlTransaction(unitOfWork(orm), async (tx) => {
        await sqlRun(tx, sql`insert into tx_probe (id, label) values (${12}, ${'twelve, taken back'})`);
        await sqlRun(tx, sql`insert into tx_probe (id, label) values (${taken}, ${'duplicate key'})`);
      }),
      sqlTransaction(unitOfWork(orm), async (tx) => {
        await sqlRun(tx, sql`insert into tx_probe (id, label) values (${13}, ${'thirteen'})`);
        return sqlRows<{ label: string }>(tx, sql`select label from tx_probe where id in (${10}, ${11}, ${12}) order by id`);
      }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBe(failure);
    // The last sees neither failed one's writes, and on SQLite, where the group runs them in order,
    // the first's (PostgreSQL runs them side by side: the first may not have committed yet).
    const seen = (outcomes[3] as PromiseFulfilledResult<{ label: string }[]>).value.map((row) => row.label);
    expect(seen).toEqual(backend === 'sqlite' ? ['ten'] : seen.length ? ['ten'] : []);
    expect(await labels()).toEqual(['one', 'two', 'five', 'outside', 'ten', 'thirteen']);
  });

  it('answers a transaction only once it is committed, for another connection to read', async () => {
    if (backend !== 'sqlite') return; // PostgreSQL commits each transaction on its own
    const reader = new DatabaseSync(database.url.slice('sqlite:'.length), { readOnly: true });
    try {
      const seen = await Promise.all(
        [20, 21, 22, 23].map((id) =>
          sqlTransaction(unitOfWork(orm), (tx) => sqlRun(tx, sql`insert into tx_probe (id, label) values (${id}, ${`group ${id}`})`)).then(
            // Read by another connection as each answer arrives: the group's writes are all there.
            () => (reader.prepare('select count(*) as n from tx_probe where id between 20 and 23').get() as { n: number }).n,
          ),
        ),
      );
      expect(seen).toEqual([4, 4, 4, 4]);
    } finally {
      reader.close();
    }
  });

  it('commits every one of more transactions than one group takes', async () => {
    const ids = Array.from({ length: 70 }, (_, i) => 100 + i);
    const written = await Promise.all(ids.map((id) => sqlTransaction(unitOfWork(orm), (tx) => sqlRun(tx, sql`insert into tx_probe (id, label) values (${id}, ${'many'})`))));
    expect(written).toEqual(ids.map(() => 1));
    const [row] = await sqlRows<{ n: number | string }>(unitOfWork(orm), sql`select count(*) as n from tx_probe where label = ${'many'}`);
    expect(Number(row!.n)).toBe(70);
  });

  it('runs transactions asked for while a group is at work in a group after it', async () => {
    const first = sqlTransaction(unitOfWork(orm), async (tx) => {
      await sqlRun(tx, sql`insert into tx_probe (id, label) values (${200}, ${'first'})`);
      await sleep(50); // the loop turns: the two below are asked for meanwhile
      return 'first done';
    });
    await sleep(10);
    const later = Promise.all([201, 202].map((id) => sqlTransaction(unitOfWork(orm), (tx) => sqlRun(tx, sql`insert into tx_probe (id, label) values (${id}, ${'later'})`))));
    expect(await first).toBe('first done');
    expect(await later).toEqual([1, 1]);
    const [row] = await sqlRows<{ n: number | string }>(unitOfWork(orm), sql`select count(*) as n from tx_probe where id between 200 and 202`);
    expect(Number(row!.n)).toBe(3);
  });
});
