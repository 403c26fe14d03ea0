import type { AnnotationQueueItem, AnnotationQueueItemProgressReq, ProgressState } from '@loupe/shared';
import { onPostgres, sqlDate, sqlRows, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { itemProgressed, publishingTransaction, queueEvent, type QueueEventPublisher } from './queue-events.ts';
import { invalid, notFound } from './errors.ts';
import { blindItem, ITEM_COLUMNS, itemRefOf, liveItem, queueIsLive, toItemDto, type ItemRow } from './queue-items.ts';
import { mayWorkTerm, notAnAssignee } from './queue-access.ts';
import { decideTransition } from './transitions.ts';

/** One annotator's new state of an item: a new record or a change of theirs, with its lease. */
export type ProgressChange = { annotatorId: string; state: ProgressState; action: 'insert' | 'update'; leaseSeconds: number; now?: Date };

/**
 * Writes one annotator's progress record and makes it the item's shown state, unless another
 * annotator's record is more recent (clocks of several processes); returns whether it is shown. Callers hold the
 * item's row lock (PostgreSQL) or the one SQLite connection, so writers of one item are serial.
 */
export async function recordProgress(
  db: SqlScope,
  item: { id: string; queue_id: string },
  { annotatorId, state, action, leaseSeconds, now = new Date() }: ProgressChange,
): Promise<boolean> {
  const at = sqlDate(db, now);
  // in_progress holds a lease (it counts against annotations_per_item until it expires).
  const lease = state === 'in_progress' ? sqlDate(db, new Date(now.getTime() + leaseSeconds * 1000)) : null;
  if (action === 'insert') {
    await sqlRun(db, sql`insert into annotation_item_progress (item_id, annotator_user_id, queue_id, state, lease_expires_at, created_at, updated_at)
      values (${item.id}, ${annotatorId}, ${item.queue_id}, ${state}, ${lease}, ${at}, ${at})`);
  } else {
    await sqlRun(db, sql`update annotation_item_progress set state = ${state}, lease_expires_at = ${lease}, updated_at = ${at}
      where item_id = ${item.id} and annotator_user_id = ${annotatorId}`);
  }
  // The shown state is the most recently updated record's; the item's own updated_at stays.
  const shown = await sqlRun(db, sql`update annotation_queue_items set state = ${state}, state_annotator_user_id = ${annotatorId}, state_updated_at = ${at}
    where id = ${item.id} and (state_updated_at is null or state_updated_at <= ${at})`);
  return shown === 1;
}

/** The caller's progress record's state, whether the queue is live, and whether the caller may work it (5.11). */
type CallerState = { state: ProgressState | null; live: 0 | 1; may_work: number | string };

/**
 * The live item, locked for the write (liveItem), with the caller's progress record's state.
 *
 * PostgreSQL: with the item's lock and the queue's held, the caller's record, and whether the queue
 * is still live (a delete that came meanwhile is seen by this later statement; the test of
 * queue-items.ts's queueIsLive). SQLite: one statement reads both, liveItem's select with the
 * record's state: its transaction runs alone (begun immediate), so nothing changes between reads,
 * and its join to the live queue is that test (one statement of five fewer per update).
 */
async function itemForWrite(tx: SqlScope, req: AnnotationQueueItemProgressReq, userId: string): Promise<{ item: LiveItem; state: ProgressState | null }> {
  if (!onPostgres(tx)) {
    const [row] = await sqlRows<LiveItem & { caller_state: ProgressState | null; may_work: number }>(tx, sql`select ${ITEM_COLUMNS}, q.lease_seconds,
        (select p.state from annotation_item_progress p where p.item_id = i.id and p.annotator_user_id = ${userId}) as caller_state,
        ${mayWorkTerm(userId)} as may_work
        from annotation_queue_items i join annotation_queues q on q.id = i.queue_id
       where i.id = ${req.item_id} and i.queue_id = ${req.queue_id} and i.project_id = ${req.project_id}
         and i.deleted_at is null and q.deleted_at is null`);
    if (row) {
      if (Number(row.may_work) !== 1) throw notAnAssignee(req.queue_id);
      return { item: row, state: row.caller_state };
    }
    // No such live item: liveItem answers the 404.
  }
  const item = await liveItem(tx, itemRefOf(req), true);
  const [current] = await sqlRows<CallerState>(tx, sql`select
      (select p.state from annotation_item_progress p where p.item_id = ${req.item_id} and p.annotator_user_id = ${userId}) as state,
      case when ${queueIsLive(req.queue_id)} then 1 else 0 end as live,
      (select ${mayWorkTerm(userId)} from annotation_queues q where q.id = ${req.queue_id}) as may_work`);
  if (current?.live !== 1) throw notFound(`Annotation queue "${req.queue_id}" does not exist in project ${req.project_id}.`);
  if (Number(current.may_work) !== 1) throw notAnAssignee(req.queue_id);
  return { item, state: current.state };
}

type LiveItem = ItemRow & { lease_seconds: number };

/**
 * The interface document's progress operation (contract 4.1). In an assigned queue only its
 * assignees may post progress (5.11, 403); an annotator (`blind`) is answered with their own state.
 */
export async function updateProgress(
  db: SqlScope,
  { userId, blind, req, events }: { userId: string; blind: boolean; req: AnnotationQueueItemProgressReq; events: QueueEventPublisher },
): Promise<AnnotationQueueItem> {
  const shownTo = (item: AnnotationQueueItem) => (blind ? blindItem(item, { userId, state: req.annotation_state }) : item);
  return publishingTransaction(db, events, async (tx, record) => {
    const { item, state } = await itemForWrite(tx, req, userId);
    const decision = decideTransition(state, req.annotation_state);
    if (decision.action === 'reject') throw invalid(decision.reason);
    if (decision.action === 'none') return shownTo(toItemDto(item));
    const shown = await recordProgress(tx, item, { annotatorId: userId, state: req.annotation_state, action: decision.action, leaseSeconds: item.lease_seconds });
    record(queueEvent('progress', itemRefOf(req)), itemProgressed({ item, annotatorId: userId, state: req.annotation_state }));
    if (!shown) return shownTo(toItemDto(await liveItem(tx, itemRefOf(req))));
    return toItemDto({ ...item, state: req.annotation_state, state_annotator_user_id: userId });
  });
}
