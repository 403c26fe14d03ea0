import pg from 'pg';
import {
  candidateExcluding,
  credentialsOf,
  fail,
  itemJson,
  leaseEnd,
  MAX_CLAIM_ATTEMPTS,
  numbered,
  SQL,
  STATES,
  transition,
  userOf,
  writeRefusal,
  type AuthRow,
  type Reply,
  type User,
} from './baseline-queue-sql.ts';
import type { QueueWrites } from './baseline-queue-writes.ts';

// Progress and claim written by hand over a `pg` Pool of Loupe's default size: the auth lookup
// and the queue lookup on any pooled connection, the writes in one transaction on one connection
// with the row locks and the advisory lock Loupe takes. Dates are passed as Date objects.

type Row = Record<string, unknown>;
type Queryable = pg.Pool | pg.PoolClient;

const POOL_SIZE = Number(process.env.LOUPE_DB_POOL_SIZE ?? 10);

export function postgresQueueWrites(url: string): QueueWrites {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE });
  const rows = async (db: Queryable, sql: string, ...params: unknown[]) => (await db.query(numbered(sql), params)).rows as Row[];
  const first = async (db: Queryable, sql: string, ...params: unknown[]) => (await rows(db, sql, ...params))[0];
  const run = async (db: Queryable, sql: string, ...params: unknown[]) => (await db.query(numbered(sql), params)).rowCount ?? 0;

  async function transaction(work: (client: pg.PoolClient) => Promise<Reply>): Promise<Reply> {
    const client = await pool.connect();
    try {
      await client.query('begin');
      const reply = await work(client);
      await client.query(reply.status === 200 ? 'commit' : 'rollback');
      return reply;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async function authenticate(header: string | undefined): Promise<User | null> {
    const credentials = credentialsOf(header);
    return credentials ? userOf((await rows(pool, SQL.auth, credentials.hash)) as AuthRow[], credentials) : null;
  }

  async function record(db: Queryable, item: Row, userId: string, state: string, action: 'insert' | 'update', leaseSeconds: number, now: Date) {
    const lease = leaseEnd(now, state, leaseSeconds);
    if (action === 'insert') await run(db, SQL.insertProgress, item.id, userId, item.queue_id, state, lease, now, now);
    else await run(db, SQL.updateProgress, state, lease, now, item.id, userId);
    return (await run(db, SQL.showState, state, userId, now, item.id, now)) === 1;
  }

  return {
    async progress(authorization, queueId, itemId, body) {
      const user = await authenticate(authorization);
      if (!user) return fail(401, 'unknown or revoked API key');
      const { project_id: projectId, annotation_state: state } = (body ?? {}) as Row;
      if (typeof state !== 'string' || !STATES.has(state)) return fail(400, 'annotation_state must be in_progress, completed or skipped');
      const refusal = writeRefusal(user, projectId);
      if (refusal) return refusal;
      return transaction(async (tx) => {
        const item = await first(tx, `${SQL.liveItem} for update of i`, itemId, queueId, projectId);
        if (!item) return fail(404, 'no such item');
        const current = ((await first(tx, SQL.progressState, itemId, user.id))?.state as string | undefined) ?? null;
        const action = transition(current, state);
        if (typeof action !== 'string') return action;
        if (action === 'none') return { status: 200, body: { item: itemJson(item) } };
        if (!(await record(tx, item, user.id, state, action, Number(item.lease_seconds), new Date()))) {
          return { status: 200, body: { item: itemJson((await first(tx, SQL.liveItem, itemId, queueId, projectId))!) } };
        }
        return { status: 200, body: { item: itemJson(item, { state, annotator: user.id }) } };
      });
    },

    async claim(authorization, queueId, body) {
      const user = await authenticate(authorization);
      if (!user) return fail(401, 'unknown or revoked API key');
      const projectId = ((body ?? {}) as Row).project_id;
      const refusal = writeRefusal(user, projectId);
      if (refusal) return refusal;
      const queue = await first(pool, SQL.liveQueue, queueId, projectId);
      if (!queue) return fail(404, 'no such queue');
      return transaction(async (tx) => {
        await tx.query(numbered(SQL.advisoryLock), [`claim ${queueId} ${user.id}`]);
        const now = new Date();
        const own = await first(tx, SQL.ownLease, queueId, user.id, now);
        if (own) return { status: 200, body: { item: itemJson(own) } };
        const passedOver: unknown[] = [];
        for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
          const pick = (lock: string) => first(tx, `${candidateExcluding(passedOver.length)} ${lock}`, queueId, ...passedOver, user.id, now, queue.annotations_per_item);
          const candidate = (await pick('for update of i skip locked')) ?? (await pick('for update of i'));
          if (!candidate) return { status: 200, body: { item: null } };
          if (Number((await first(tx, SQL.taken, candidate.id, now))!.taken) >= Number(queue.annotations_per_item)) {
            passedOver.push(candidate.id);
            continue;
          }
          await record(tx, candidate, user.id, 'in_progress', 'insert', Number(queue.lease_seconds), now);
          return { status: 200, body: { item: itemJson(candidate, { state: 'in_progress', annotator: user.id }) } };
        }
        return { status: 200, body: { item: null } };
      });
    },
  };
}
