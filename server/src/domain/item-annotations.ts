import type { AnnotationQueueItemAnnotations, AnnotationQueueItemAnnotationsReq } from '@loupe/shared';
import { sqlRows, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { liveQueue } from './annotation-queues.ts';
import { requiredOfQueue } from './coverage.ts';
import { countedWork } from './queue-access.ts';

/**
 * `POST /annotation_queues/{queue_id}/items/annotations`: per item, how many annotators completed
 * or skipped it (those whose work counts in the queue: what `done_items` of the stats counts against
 * the quota) and its quota. Counts only: whoever may read the project may ask (its procedure checks
 * that). Read with every page of the queue page's items, so a template statement (db/README.md):
 * one seek per item on the progress table's primary key (item_id, annotator_user_id).
 */
export async function itemAnnotations(db: SqlScope, req: AnnotationQueueItemAnnotationsReq): Promise<AnnotationQueueItemAnnotations[]> {
  const queue = await liveQueue(db, req.project_id, req.queue_id);
  const ids = [...new Set(req.item_ids)];
  const rows = await sqlRows<{ id: string; done: number | string; required: number | string }>(db,
    sql`select i.id, ${requiredOfQueue(queue)} as required,
          (select count(*) from annotation_item_progress p where p.item_id = i.id and p.state in ('completed', 'skipped') and ${countedWork(queue.access)}) as done
          from annotation_queue_items i
         where i.queue_id = ${req.queue_id} and i.deleted_at is null and i.id in (${sql.list(ids)})`,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    return row ? [{ item_id: id, annotations_done: Number(row.done), annotations_required: Number(row.required) }] : [];
  });
}
