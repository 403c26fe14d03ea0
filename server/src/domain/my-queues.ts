import { splitProjectId, type AnnotationQueueMineReq, type MyQueue } from '@loupe/shared';
import { sqlRows, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import type { AuthUser } from './auth-user.ts';
import { queueBytes, queueDtos, QUEUE_COLUMNS, type QueueRow } from './annotation-queues.ts';
import { requireAnswerFits } from './answer-budget.ts';
import { forbidden, tooLarge } from './errors.ts';
import { openTo } from './queue-access.ts';
import { itemTallies, workerTallies, workOf } from './queue-work.ts';

/** Queues one answer lists at most: past it, the caller names a project. */
export const MAX_MY_QUEUES = 1000;

/**
 * `POST /annotation_queues/mine` (contract 5.11): every live queue the caller may claim from — the
 * open queues of the projects of the entities where they may annotate (admin, member, annotator;
 * a viewer claims nothing), and the assigned queues naming them — with what is left for them
 * (queue-work.ts's `remaining`) and what they finished. By project, then newest first.
 */
export async function myQueues(db: SqlScope, { user, req, budget }: { user: AuthUser; req: AnnotationQueueMineReq; budget: number }): Promise<MyQueue[]> {
  if (req.project_id !== undefined) {
    const { entity } = splitProjectId(req.project_id);
    if (!user.roles.has(entity)) throw forbidden(`You are not a member of entity "${entity}".`);
  }
  const entities = [...user.roles].filter(([entity, role]) => role !== 'viewer' && (req.project_id === undefined || splitProjectId(req.project_id).entity === entity));
  if (!entities.length) return [];
  const where = [
    sql`q.deleted_at is null`,
    sql`q.project_id in (select p.id from projects p where p.entity in (${sql.list(entities.map(([entity]) => entity))}))`,
    openTo(user.id),
  ];
  if (req.project_id !== undefined) where.push(sql`q.project_id = ${req.project_id}`);
  const condition = sql.join(where, ' and ');
  const [sized] = await sqlRows<{ n: number | string; bytes: number | string | null }>(db,
    sql`select count(*) as n, sum(${queueBytes(db)}) as bytes from annotation_queues q where ${condition}`);
  if (Number(sized?.n ?? 0) > MAX_MY_QUEUES) {
    throw tooLarge(`You may claim from more than ${MAX_MY_QUEUES} queues, more than one answer lists: name a project_id.`);
  }
  requireAnswerFits({ what: 'queues', bytes: sized?.bytes ?? 0, budget, narrower: 'name a project_id' });
  const rows = await sqlRows<QueueRow>(db, sql`select ${QUEUE_COLUMNS} from annotation_queues q where ${condition} order by q.created_at desc, q.id desc`);
  if (!rows.length) return [];
  // Projects in code-unit order, the same on every database whatever its collation (a stable sort keeps the newest first within each).
  rows.sort((a, b) => (a.project_id < b.project_id ? -1 : a.project_id > b.project_id ? 1 : 0));
  const ids = rows.map((row) => row.id);
  const items = await itemTallies(db, ids);
  const mine = await workerTallies(db, { queueIds: ids, userIds: [user.id], now: new Date() });
  const queues = await queueDtos(db, rows);
  return queues.map((queue) => {
    const work = workOf(items.get(queue.id)!, mine.get(queue.id)!.get(user.id), user.id);
    return { project_id: queue.project_id, queue, remaining_for_me: work.remaining, done_by_me: work.done };
  });
}
