import type { FeedbackCreateReq, QueueAccess } from '@loupe/shared';
import { sqlRows, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { isAnnotatorIn } from './access.ts';
import type { AuthUser } from './auth-user.ts';
import { forbidden } from './errors.ts';

// Who may work a queue (contract 5.11). An `open` queue is open to everyone who may annotate in
// its project (admins, members, annotators); an `assigned` one only to its assignees, and in it
// only the assignees' work counts: toward an item's quota, in the stats, in agreement. Annotators
// see nothing of a queue that is not open to them.

/** Whether progress record `p` counts in its queue, whose access is known: every record of an open queue, an assignee's of an assigned one. */
export function countedWork(access: QueueAccess | string): Statement {
  return access === 'assigned' ? ASSIGNEE_WORK : sql`1 = 1`;
}

const ASSIGNEE_WORK = sql`exists (select 1 from annotation_queue_assignees a where a.queue_id = p.queue_id and a.user_id = p.annotator_user_id)`;

/** Whether progress record `p` counts in its queue `q` (joined by the statement). */
export const COUNTED_IN_QUEUE = sql`(q.access = 'open' or ${ASSIGNEE_WORK})`;

/** Whether queue `q` is open to the user. */
export function openTo(userId: string): Statement {
  return sql`(q.access = 'open' or exists (select 1 from annotation_queue_assignees a where a.queue_id = q.id and a.user_id = ${userId}))`;
}

/** A select-list term: whether the user is an assignee of queue `q` (0 or 1 on both databases). */
export function assigneeTerm(userId: string): Statement {
  return sql`case when exists (select 1 from annotation_queue_assignees a where a.queue_id = q.id and a.user_id = ${userId}) then 1 else 0 end`;
}

/** A select-list term: whether the user may work queue `q` (1) or not (0): it is open, or assigned to them. */
export function mayWorkTerm(userId: string): Statement {
  return sql`case when q.access = 'open' or exists (select 1 from annotation_queue_assignees a where a.queue_id = q.id and a.user_id = ${userId}) then 1 else 0 end`;
}

/** The 403 of a claim, progress or annotation by someone an assigned queue does not name. */
export const notAnAssignee = (queueId: string) => forbidden(`Annotation queue "${queueId}" is assigned, and you are not one of its assignees.`);

/** The 403 of an annotator who names a queue that is not open to them. */
const notOpenToYou = (queueId: string) => forbidden(`Annotation queue "${queueId}" is not open to you: it is assigned to others.`);

type QueueAccessRow = { id: string; project_id: string; access: QueueAccess; assignee: number | string | boolean };

/** Access and the user's assignment of the live queues among these (per project). */
async function accessOf(db: SqlScope, { userId, queueIds }: { userId: string; queueIds: readonly string[] }): Promise<Map<string, QueueAccessRow>> {
  const found = new Map<string, QueueAccessRow>();
  const ids = [...new Set(queueIds)];
  for (let start = 0; start < ids.length; start += 500) {
    const rows = await sqlRows<QueueAccessRow>(db, sql`select q.id, q.project_id, q.access, ${assigneeTerm(userId)} as assignee
      from annotation_queues q where q.id in (${sql.list(ids.slice(start, start + 500))}) and q.deleted_at is null`);
    for (const row of rows) found.set(`${row.project_id}\u0000${row.id}`, row);
  }
  return found;
}

const isOpen = (row: QueueAccessRow) => row.access === 'open' || Number(row.assignee) === 1;

/**
 * For an annotator: each live queue named must be open to them, else 403. Anyone else passes, and
 * so does a queue that does not exist (the operation answers its 404).
 */
export async function requireQueuesOpenTo(db: SqlScope, { user, projectId, queueIds }: { user: AuthUser; projectId: string; queueIds: readonly string[] }): Promise<void> {
  if (!isAnnotatorIn(user, projectId) || !queueIds.length) return;
  const found = await accessOf(db, { userId: user.id, queueIds });
  for (const queueId of queueIds) {
    const row = found.get(`${projectId}\u0000${queueId}`);
    if (row && !isOpen(row)) throw notOpenToYou(queueId);
  }
}

/** The live queues of a project open to the user, newest first. */
export async function queuesOpenTo(db: SqlScope, { userId, projectId }: { userId: string; projectId: string }): Promise<string[]> {
  const rows = await sqlRows<{ id: string }>(db,
    sql`select q.id from annotation_queues q where q.project_id = ${projectId} and q.deleted_at is null and ${openTo(userId)} order by q.created_at desc, q.id desc`);
  return rows.map((row) => row.id);
}

/**
 * Feedback that names queues (contract 5.11): an `svc.annotation.*` record naming an assigned
 * queue comes from one of its assignees; an annotator's every record names a queue open to them.
 * 403 naming the element otherwise. A queue that is not live is left to the rules' 400.
 */
export async function requireFeedbackQueueAccess(db: SqlScope, { user, elements, where }: { user: AuthUser; elements: readonly FeedbackCreateReq[]; where: (index: number) => string }): Promise<void> {
  const named = elements.flatMap((element) => (element.queue_id ? [element.queue_id] : []));
  const found = named.length ? await accessOf(db, { userId: user.id, queueIds: named }) : new Map<string, QueueAccessRow>();
  // Most callers are annotators nowhere: then no element's project id needs splitting.
  const annotatorSomewhere = [...user.roles.values()].includes('annotator');
  for (let index = 0; index < elements.length; index++) {
    const element = elements[index]!;
    const annotator = annotatorSomewhere && isAnnotatorIn(user, element.project_id);
    if (!element.queue_id) {
      if (annotator) throw forbidden(`${where(index)}queue_id is required: an annotator gives feedback in the annotation queues open to them.`);
      continue;
    }
    const row = found.get(`${element.project_id}\u0000${element.queue_id}`);
    if (!row || isOpen(row)) continue;
    if (annotator) throw forbidden(`${where(index)}queue_id: ${notOpenToYou(element.queue_id).message}`);
    if (element.feedback_type.startsWith('svc.annotation.')) throw forbidden(`${where(index)}queue_id: ${notAnAssignee(element.queue_id).message}`);
  }
}
