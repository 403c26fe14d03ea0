import type { AnnotationQueueStats } from '@loupe/shared';
import type { AuthUser } from './auth-user.ts';
import { placeholders, sqlRows, type SqlScope } from '../db/sql.ts';
import { requireProjectAccess } from './access.ts';
import { liveQueues } from './annotation-queues.ts';

type Count = number | string;

/**
 * Per queue: live items, items finished (completed or skipped) by at least one annotator, items by
 * their shown state, and each annotator's progress records by state.
 */
export async function queueStats(db: SqlScope, user: AuthUser, projectId: string, queueIds: readonly string[]): Promise<AnnotationQueueStats[]> {
  requireProjectAccess(user, projectId, 'read');
  const ids = [...new Set(queueIds)];
  await liveQueues(db, projectId, ids);
  const inQueues = `in (${placeholders(ids.length)})`;

  const byState = await sqlRows<{ queue_id: string; state: string; n: Count }>(db,
    `select queue_id, state, count(*) as n from annotation_queue_items
      where queue_id ${inQueues} and deleted_at is null group by queue_id, state`,
    ids,
  );
  const finished = await sqlRows<{ queue_id: string; n: Count }>(db,
    `select i.queue_id, count(*) as n from annotation_queue_items i
      where i.queue_id ${inQueues} and i.deleted_at is null
        and exists (select 1 from annotation_item_progress p where p.item_id = i.id and p.state in ('completed', 'skipped'))
      group by i.queue_id`,
    ids,
  );
  const byAnnotator = await sqlRows<{ queue_id: string; annotator_user_id: string; state: string; n: Count }>(db,
    `select p.queue_id, p.annotator_user_id, p.state, count(*) as n from annotation_item_progress p
       join annotation_queue_items i on i.id = p.item_id
      where p.queue_id ${inQueues} and i.deleted_at is null
      group by p.queue_id, p.annotator_user_id, p.state`,
    ids,
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
    return {
      queue_id: queueId,
      total_items: Object.values(states).reduce((a, b) => a + b, 0),
      completed_items: Number(finished.find((row) => row.queue_id === queueId)?.n ?? 0),
      by_state: states,
      by_annotator: [...annotators.values()].sort((a, b) => a.annotator_user_id.localeCompare(b.annotator_user_id)),
    };
  });
}
