import type { AnnotationQueueStats } from '@loupe/shared';
import { sqlRows, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { assigneesOf, liveQueues } from './annotation-queues.ts';
import { itemTallies, workerTallies, workOf } from './queue-work.ts';

type Count = number | string;

const byUserId = <T>(key: (entry: T) => string) => (a: T, b: T) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

/**
 * Per queue: live items, items finished (completed or skipped) by at least one annotator, items by
 * their shown state, each annotator's progress records by state, items done (finished by as many
 * annotators as the item's quota asks for), and each assignee's share (5.11). Only the work that
 * counts in a queue is counted (in an assigned queue, the assignees'; queue-work.ts).
 *
 * `blindTo`, an annotator (5.11): the counts of items stay, but of the per-person lists only their
 * own entries are given, so that no other annotator's work can be told apart.
 */
export async function queueStats(
  db: SqlScope,
  { projectId, queueIds, blindTo }: { projectId: string; queueIds: readonly string[]; blindTo?: string },
): Promise<AnnotationQueueStats[]> {
  const ids = [...new Set(queueIds)];
  await liveQueues(db, projectId, ids);
  const now = new Date();

  const byState = await sqlRows<{ queue_id: string; state: string; n: Count }>(db,
    sql`select queue_id, state, count(*) as n from annotation_queue_items
      where queue_id in (${sql.list(ids)}) and deleted_at is null group by queue_id, state`,
  );
  const items = await itemTallies(db, ids);
  const workers = await workerTallies(db, { queueIds: ids, now });
  const assignees = await assigneesOf(db, ids);

  return ids.map((queueId) => {
    const states = { unstarted: 0, in_progress: 0, completed: 0, skipped: 0 };
    for (const row of byState) if (row.queue_id === queueId) states[row.state as keyof typeof states] = Number(row.n);
    const tally = items.get(queueId)!;
    const byWorker = workers.get(queueId)!;
    const shown = (userId: string) => blindTo === undefined || userId === blindTo;
    const byAnnotator = [...byWorker.entries()]
      .filter(([userId]) => shown(userId))
      .map(([userId, work]) => ({ annotator_user_id: userId, in_progress: work.inProgress, completed: work.completed, skipped: work.skipped }))
      .sort(byUserId((entry) => entry.annotator_user_id));
    const people = new Set([...(assignees.get(queueId) ?? []), ...tally.assigned.keys()]);
    const byAssignee = [...people]
      .filter(shown)
      .map((userId) => ({ user_id: userId, ...workOf(tally, byWorker.get(userId), userId) }))
      .sort(byUserId((entry) => entry.user_id));
    return {
      queue_id: queueId,
      total_items: Object.values(states).reduce((a, b) => a + b, 0),
      completed_items: tally.finishedItems,
      by_state: states,
      by_annotator: byAnnotator,
      done_items: tally.doneItems,
      by_assignee: byAssignee,
    };
  });
}
