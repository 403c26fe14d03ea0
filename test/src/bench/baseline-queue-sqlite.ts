import { DatabaseSync, type StatementSync } from 'node:sqlite';
import {
  candidateExcluding,
  credentialsOf,
  fail,
  itemJson,
  leaseEnd,
  MAX_CLAIM_ATTEMPTS,
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

// Progress and claim written by hand over `node:sqlite` (DatabaseSync): statements prepared once,
// each transaction run synchronously on the one connection (which serialises writers, as Loupe's
// one SQLite connection does). Same pragmas as Loupe's dialect; dates are epoch milliseconds.

type Row = Record<string, unknown>;

export function sqliteQueueWrites(path: string): QueueWrites {
  const db = new DatabaseSync(path);
  db.exec('pragma journal_mode = wal; pragma synchronous = normal; pragma busy_timeout = 5000; pragma foreign_keys = on');
  const prepared = new Map<string, StatementSync>();
  const statement = (sql: string) => {
    let stmt = prepared.get(sql);
    if (!stmt) prepared.set(sql, (stmt = db.prepare(sql)));
    return stmt;
  };
  const get = (sql: string, ...params: unknown[]) => statement(sql).get(...(params as never[])) as Row | undefined;
  const all = (sql: string, ...params: unknown[]) => statement(sql).all(...(params as never[])) as Row[];
  const run = (sql: string, ...params: unknown[]) => Number(statement(sql).run(...(params as never[])).changes);

  // `begin immediate`, as Loupe's dialect: a deferred transaction that read and then writes fails at
  // once (SQLITE_BUSY) when another connection committed meanwhile, instead of waiting its turn.
  function transaction(work: () => Reply): Reply {
    db.exec('begin immediate');
    try {
      const reply = work();
      db.exec(reply.status === 200 ? 'commit' : 'rollback');
      return reply;
    } catch (error) {
      db.exec('rollback');
      throw error;
    }
  }

  function authenticate(header: string | undefined): User | null {
    const credentials = credentialsOf(header);
    return credentials ? userOf(all(SQL.auth, credentials.hash) as AuthRow[], credentials) : null;
  }

  /** recordProgress of server/src/domain/progress.ts; true when this record is now the shown state. */
  function record(item: Row, userId: string, state: string, action: 'insert' | 'update', leaseSeconds: number, now: Date): boolean {
    const at = now.getTime();
    const lease = leaseEnd(now, state, leaseSeconds)?.getTime() ?? null;
    if (action === 'insert') run(SQL.insertProgress, item.id, userId, item.queue_id, state, lease, at, at);
    else run(SQL.updateProgress, state, lease, at, item.id, userId);
    return run(SQL.showState, state, userId, at, item.id, at) === 1;
  }

  return {
    progress(authorization, queueId, itemId, body) {
      const user = authenticate(authorization);
      if (!user) return fail(401, 'unknown or revoked API key');
      const { project_id: projectId, annotation_state: state } = (body ?? {}) as Row;
      if (typeof state !== 'string' || !STATES.has(state)) return fail(400, 'annotation_state must be in_progress, completed or skipped');
      const refusal = writeRefusal(user, projectId);
      if (refusal) return refusal;
      return transaction(() => {
        const item = get(SQL.liveItem, itemId, queueId, projectId);
        if (!item) return fail(404, 'no such item');
        const current = (get(SQL.progressState, itemId, user.id)?.state as string | undefined) ?? null;
        const action = transition(current, state);
        if (typeof action !== 'string') return action;
        if (action === 'none') return { status: 200, body: { item: itemJson(item) } };
        if (!record(item, user.id, state, action, Number(item.lease_seconds), new Date())) {
          return { status: 200, body: { item: itemJson(get(SQL.liveItem, itemId, queueId, projectId)!) } };
        }
        return { status: 200, body: { item: itemJson(item, { state, annotator: user.id }) } };
      });
    },

    claim(authorization, queueId, body) {
      const user = authenticate(authorization);
      if (!user) return fail(401, 'unknown or revoked API key');
      const projectId = ((body ?? {}) as Row).project_id;
      const refusal = writeRefusal(user, projectId);
      if (refusal) return refusal;
      const queue = get(SQL.liveQueue, queueId, projectId);
      if (!queue) return fail(404, 'no such queue');
      return transaction(() => {
        const now = new Date();
        const at = now.getTime();
        const own = get(SQL.ownLease, queueId, user.id, at);
        if (own) return { status: 200, body: { item: itemJson(own) } };
        const passedOver: unknown[] = [];
        for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
          const candidate = get(candidateExcluding(passedOver.length), queueId, ...passedOver, user.id, at, queue.annotations_per_item);
          if (!candidate) return { status: 200, body: { item: null } };
          if (Number(get(SQL.taken, candidate.id, at)!.taken) >= Number(queue.annotations_per_item)) {
            passedOver.push(candidate.id);
            continue;
          }
          record(candidate, user.id, 'in_progress', 'insert', Number(queue.lease_seconds), now);
          return { status: 200, body: { item: itemJson(candidate, { state: 'in_progress', annotator: user.id }) } };
        }
        return { status: 200, body: { item: null } };
      });
    },
  };
}
