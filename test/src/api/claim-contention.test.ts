import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailable, withClient } from '../harness/databases.ts';
import { createUser, type CreatedKeyForTest, type Reply } from '../harness/http.ts';
import { claim, createQueue, queueWithItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Claims under contention on PostgreSQL, with the interleavings forced by locks held here.
// (On SQLite claims run one at a time: there is nothing to contend with.)

const NAME = 'claim under contention';

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** Polls until a backend of the database waits on a row lock held by `holderPid`, or `done` settles. */
async function blockedBy(observer: pg.Client, holderPid: number, done: Promise<unknown>, timeoutMs = 10_000): Promise<boolean> {
  let settled = false;
  void done.then(
    () => (settled = true),
    () => (settled = true),
  );
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && !settled) {
    const { rows } = await observer.query(`select 1 from pg_stat_activity where datname = current_database() and $1 = any(pg_blocking_pids(pid))`, [holderPid]);
    if (rows.length) return true;
    await sleep(10);
  }
  return false;
}

const pidOf = async (client: pg.Client) => Number((await client.query('select pg_backend_pid() as pid')).rows[0].pid);

describe.skip(`${NAME} [sqlite — SKIPPED: claims run one at a time under SQLite's write lock; none can deadlock or be filled under another]`, () => {
  it('retries deadlocks and passes over filled items', () => undefined);
});
(postgresAvailable ? describe : describe.skip)(postgresAvailable ? `${NAME} [postgresql]` : `${NAME} [postgresql — SKIPPED: TEST_DATABASE_URL is unset]`, () => {
  let server: TestServer;
  let annotator: CreatedKeyForTest;
  let filler: CreatedKeyForTest;
  const projectId = 'acme/contention';
  const clients: pg.Client[] = [];

  beforeAll(async () => {
    server = await startTestServer('postgresql');
    annotator = await createUser(server, { entity: 'acme', role: 'member' });
    filler = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    await server?.stop();
  });

  async function client(): Promise<pg.Client> {
    const c = await connect(server.database.url);
    clients.push(c);
    return c;
  }

  const progressRows = (queueId: string) =>
    withClient(server.database.url, async (c) =>
      (await c.query('select item_id, annotator_user_id, state from annotation_item_progress where queue_id = $1 order by item_id', [queueId])).rows,
    );

  it('a claim chosen as a deadlock victim is retried, and answers with the item', async () => {
    const { queueId, items } = await queueWithItems(server, annotator.api_key, projectId, 1);
    const holder = await client();
    const observer = await client();
    await holder.query('begin');
    // The holder is never the victim: only the claim's backend runs the deadlock check in time.
    await holder.query(`set local deadlock_timeout = '30s'`);
    await holder.query('select id from annotation_queue_items where id = $1 for update', [items[0]!.id]);
    const claiming = claim(server, annotator.api_key, projectId, queueId);
    expect(await blockedBy(observer, await pidOf(holder), claiming), 'the claim did not wait for the locked item').toBe(true);
    // Close the cycle: the holder now waits for the claim's own advisory lock.
    await holder.query(`select pg_advisory_xact_lock(hashtextextended($1, 0))`, [`claim ${queueId} ${annotator.user_id}`]);
    await holder.query('rollback');
    const reply: Reply = await claiming;
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.item).toMatchObject({ id: items[0]!.id, annotation_state: 'in_progress', annotator_user_id: annotator.user_id });
    expect(await progressRows(queueId)).toEqual([{ item_id: items[0]!.id, annotator_user_id: annotator.user_id, state: 'in_progress' }]);
  });

  it('a claim keeps looking past more filled items than any fixed bound, and takes the claimable item behind them', async () => {
    const PASSED_OVER = 51; // the search used to give up (answer null) after 50
    const queueId = await createQueue(server, annotator.api_key, projectId);
    const db = await client(); // autocommit: items appear one by one
    const observer = await client();
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const insertItem = async (createdAt: number) => {
      const id = randomUUID();
      await db.query(
        `insert into annotation_queue_items (id, project_id, queue_id, call_id, call_started_at, call_op_name, call_trace_id, display_fields,
           added_by, created_at, created_by, updated_at, coverage_point)
         values ($1, $2, $3, $4, $5, 'chat', 't', '[]', $6, $5, $6, $5, 0.5)`,
        [id, projectId, queueId, `call-${id}`, new Date(createdAt), annotator.user_id],
      );
      return id;
    };
    /** A transaction that holds an item's row lock and fills its one slot, uncommitted: another claim in flight. */
    const fillInFlight = async (holder: pg.Client, itemId: string) => {
      await holder.query('begin');
      await holder.query('select id from annotation_queue_items where id = $1 for update', [itemId]);
      await holder.query(
        `insert into annotation_item_progress (item_id, annotator_user_id, queue_id, state, created_at, updated_at) values ($1, $2, $3, 'completed', now(), now())`,
        [itemId, filler.user_id, queueId],
      );
    };

    // The claimable item, last in queue order, held (not filled) by a transaction that ends last.
    const last = await insertItem(base + 1_000_000);
    const lastHolder = await client();
    await lastHolder.query('begin');
    await lastHolder.query('select id from annotation_queue_items where id = $1 for update', [last]);

    const holders = [await client(), await client()];
    let current = await insertItem(base + 1);
    await fillInFlight(holders[0]!, current);
    const claiming = claim(server, annotator.api_key, projectId, queueId);
    const passed: string[] = [];
    for (let k = 1; k <= PASSED_OVER; k++) {
      const holder = holders[(k - 1) % 2]!;
      const waiting = await blockedBy(observer, await pidOf(holder), claiming);
      expect(waiting, `after ${passed.length} items passed over, the claim ${waiting ? '' : 'no longer '}waited: it answered early`).toBe(true);
      // The next filled item appears before the current one is released.
      if (k < PASSED_OVER) {
        const next = await insertItem(base + 1 + k);
        await fillInFlight(holders[k % 2]!, next);
        await holder.query('commit');
        passed.push(current);
        current = next;
      } else {
        await holder.query('commit');
        passed.push(current);
      }
    }
    expect(await blockedBy(observer, await pidOf(lastHolder), claiming), 'the claim did not reach the last item').toBe(true);
    await lastHolder.query('rollback');
    const reply = await claiming;
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.item?.id, `${PASSED_OVER} items were passed over; the claim answered ${reply.text}`).toBe(last);
    const rows = await progressRows(queueId);
    expect(rows.filter((row) => row.annotator_user_id === annotator.user_id)).toEqual([{ item_id: last, annotator_user_id: annotator.user_id, state: 'in_progress' }]);
    expect(rows.filter((row) => row.annotator_user_id === filler.user_id)).toHaveLength(PASSED_OVER);
  });
});
