import type { AnnotationQueueStats } from '@loupe/shared';
import { sqlRows, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { liveQueues } from './annotation-queues.ts';

type Count = number | string;

/**
 * Per queue: live items, items finished (completed or skipped) by at least one annotator, items by
 * their shown state, each annotator's progress records by state, and items done (finished by as
 * many annotators as the queue asks for).
 */
export async function queueStats(db: SqlScope, projectId: string, queueIds: readonly string[]): Promise<AnnotationQueueStats[]> {
  const ids = [...new Set(queueIds)];
  await liveQueues(db, projectId, ids);
  const inQueues = sql`in (${sql.list(ids)})`;

  const byState = await sqlRows<{ queue_id: string; state: string; n: Count }>(db,
    sql`select queue_id, state, count(*) as n from annotation_queue_items
      where queue_id ${inQueues} and deleted_at is null group by queue_id, state`,
  );
  // Per queue, the live items with at least one finishing annotator, and those with as many as
  // the queue asks for.
  const finished = await sqlRows<{ queue_id: string; finished: Count; done: Count }>(db,
    sql`select i.queue_id, count(*) as finished, sum(case when f.n >= q.annotations_per_item then 1 else 0 end) as done
       from annotation_queue_items i
       join annotation_queues q on q.id = i.queue_id
       join (select item_id, count(*) as n from annotation_item_progress
              where queue_id ${inQueues} and state in ('completed', 'skipped') group by item_id) f on f.item_id = i.id
      where i.queue_id ${inQueues} and i.deleted_at is null
      group by i.queue_id`,
  );
  const byAnnotator = await sqlRows<{ queue_id: string; annotator_user_id: string; state: string; n: Count }>(db,
    sql`select p.queue_id, p.annotator_user_id, p.state, count(*) as n from annotation_item_progress p
       join annotation_queue_items i on i.id = p.item_id
      where p.queue_id ${inQueues} and i.deleted_at is null
      group by p.queue_id, p.annotator_user_id, p.state`,
  );

  return ids.map((queueId) => {
    const states = { unstarted: 0, in_progress: 0, completed: 0, skipped: 0 };
    for (const row of byState) if (row.queue_id === queueId) states[row.state as keyof typeof states] = Number(row.n);
    const annotators = new Map<string, { annotator_user_id: string; in_progress: number; completed: number; skipped: number }>();
    for (const row of byAnnotator) {
      if (row.queue_id !== queueId) continue;
      const entry = annotators.get(row.annotator_user_id) ?? { annotator_user_id: row.annotator_user_id, in_progress: 0, completed: 0, skipped: 0 };
      entry[row.state as 'in_progress' | 'completed' | 'skipped'] = Number(row.n);
      annotators.set(row.annotator_user_id, entry);
    }
    const counts = finished.find((row) => row.queue_id === queueId);
    return {
      queue_id: queueId,
      total_items: Object.values(states).reduce((a, b) => a + b, 0),
      completed_items: Number(counts?.finished ?? 0),
      by_state: states,
      by_annotator: [...annotators.values()].sort((a, b) => a.annotator_user_id.localeCompare(b.annotator_user_id)),
      done_items: Number(counts?.done ?? 0),
    };
  });
}
