import { setTimeout as sleep } from 'node:timers/promises';
import type { AnnotationQueueItem, QueueAccess } from '@loupe/shared';
import { lockClause, onPostgres, sqlDate, sqlRows, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { itemProgressed, publishingTransaction, queueEvent, type QueueEventPublisher } from './queue-events.ts';
import { isTransactionConflict } from '../db/unavailable.ts';
import { queueWriteLockTerm } from './annotation-queues.ts';
import { requiredOfQueue } from './coverage.ts';
import { notFound } from './errors.ts';
import { recordProgress } from './progress.ts';
import { assigneeTerm, countedWork, notAnAssignee } from './queue-access.ts';
import { blindItem, ITEM_COLUMNS, toItemDto, type ItemRow } from './queue-items.ts';

/** Progress `p` that occupies a slot of an item at `at`: finished work, or a lease that has not expired. */
const occupying = (at: unknown): Statement => sql`(p.state in ('completed', 'skipped') or (p.state = 'in_progress' and p.lease_expires_at > ${at}))`;
/** Attempts of a claim whose transaction PostgreSQL aborted for a deadlock or a serialization failure. */
const CONFLICT_ATTEMPTS = 4;

/**
 * Hands the caller the next item to annotate (contracts 5.2 and 5.11): its own unexpired
 * in-progress item if it has one; else the first item in queue order assigned to it alone, then the
 * first item assigned to nobody, that it has not touched and that still has a free slot (its
 * quota, `annotations_required`, against the finished work and live leases that count: in an
 * assigned queue, only the assignees'), recorded as in_progress with a lease. An item assigned to
 * someone else is never handed out. In an assigned queue only its assignees may claim (403).
 *
 * On PostgreSQL a candidate is taken with FOR UPDATE SKIP LOCKED and its slots are counted again
 * after the lock is held: every writer of an item's progress holds that item's lock until it
 * commits, so the recount sees all of them; an assignment (items/assign) updates the item's row,
 * so the locked row's own conditions are checked again by PostgreSQL; a change of the queue's
 * assignees holds the queue's lock exclusive, so none happens during a claim. On SQLite the one
 * connection serialises claims.
 */
export async function claimItem(db: SqlScope, claim: Claim): Promise<AnnotationQueueItem | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await claimOnce(db, claim);
    } catch (error) {
      // The transaction was rolled back whole; the claim starts again from the top. A short wait
      // of varying length keeps the same claims from meeting again at once.
      if (attempt >= CONFLICT_ATTEMPTS || !isTransactionConflict(error)) throw error;
      await sleep(attempt * 5 + Math.random() * 10 * attempt);
    }
  }
}

/** Who claims the next item of which queue; `blind` for an annotator, who sees only their own state (5.11). */
type Claim = { userId: string; blind: boolean; projectId: string; queueId: string; events: QueueEventPublisher };

/** What a claim reads of its queue: its settings, whether the caller is an assignee, and whether any live item is assigned to the caller. */
type ClaimQueue = {
  annotations_per_item: number;
  overlap_coverage: number;
  lease_seconds: number;
  access: QueueAccess;
  assignee: number | string | boolean;
  has_assigned: number | string | boolean;
};

async function claimOnce(db: SqlScope, { userId, blind, projectId, queueId, events }: Claim): Promise<AnnotationQueueItem | null> {
  return publishingTransaction(db, events, async (tx, record) => {
    // PostgreSQL: the queue's lock shared (a delete, or a change of its assignees, waits for this
    // claim; see annotation-queues.ts), and one claim at a time per (queue, annotator), so that a
    // second concurrent claim of the same annotator finds the first one's item below instead of
    // taking another.
    if (onPostgres(tx)) {
      await sqlRows(tx, sql`select pg_advisory_xact_lock(hashtextextended(${`claim ${queueId} ${userId}`}, 0))${queueWriteLockTerm(tx, queueId)}`);
    }
    // Read after the locks: a queue deleted meanwhile is a 404, an assignee removed meanwhile a 403.
    const [queue] = await sqlRows<ClaimQueue>(tx, sql`select q.annotations_per_item, q.overlap_coverage, q.lease_seconds, q.access, ${assigneeTerm(userId)} as assignee,
        case when exists (select 1 from annotation_queue_items i where i.queue_id = q.id and i.assigned_user_id = ${userId} and i.deleted_at is null) then 1 else 0 end as has_assigned
        from annotation_queues q where q.id = ${queueId} and q.project_id = ${projectId} and q.deleted_at is null`);
    if (!queue) throw notFound(`Annotation queue "${queueId}" does not exist in project ${projectId}.`);
    if (queue.access === 'assigned' && Number(queue.assignee) !== 1) throw notAnAssignee(queueId);
    const now = new Date();
    const at = sqlDate(tx, now);
    const [own] = await sqlRows<ItemRow>(tx, sql`select ${ITEM_COLUMNS} from annotation_item_progress p
         join annotation_queue_items i on i.id = p.item_id
        where p.queue_id = ${queueId} and p.annotator_user_id = ${userId} and p.state = 'in_progress' and p.lease_expires_at > ${at}
          and i.deleted_at is null
        order by i.created_at, i.id limit 1`);
    if (own) return blind ? blindItem(toItemDto(own), { userId, state: 'in_progress' }) : toItemDto(own);

    // The slots of item `i` taken at `at` by work that counts in this queue, against its quota.
    const taken = sql`(select count(*) from annotation_item_progress p where p.item_id = i.id and ${occupying(at)} and ${countedWork(queue.access)})`;
    const free = sql`${taken} < ${requiredOfQueue(queue)}`;
    // The items assigned to the caller first (when there are any: one index seek above), then those assigned to nobody.
    const steps = [sql`i.assigned_user_id is null`];
    if (Number(queue.has_assigned) === 1) steps.unshift(sql`i.assigned_user_id = ${userId}`);
    for (const assigned of steps) {
      // Items found full once locked (filled by claims that committed meanwhile) are passed over,
      // and the search goes on: each pass excludes one more item, so it ends, and it moves on only
      // when no item with a free slot is left. (A fixed number of passes could move on while a
      // claimable item waited behind more filled ones than that.)
      const passedOver: string[] = [];
      for (;;) {
        const exclude = passedOver.length ? sql` and i.id not in (${sql.list(passedOver)})` : sql``;
        const pick = (lock: string) =>
          sqlRows<ItemRow>(tx, sql`select ${ITEM_COLUMNS} from annotation_queue_items i
              where i.queue_id = ${queueId} and i.deleted_at is null and ${assigned}${exclude}
                and not exists (select 1 from annotation_item_progress p where p.item_id = i.id and p.annotator_user_id = ${userId})
                and ${free}
              order by i.created_at, i.id
              limit 1${lockClause(tx, lock)}`);
        let [candidate] = await pick('for update of i skip locked');
        // SKIP LOCKED also passes over items that other claims hold right now, and with a quota
        // above 1 such an item may still have a free slot once they commit. Before answering
        // "nothing left", wait for those claims (the recount below decides).
        if (!candidate && onPostgres(tx)) [candidate] = await pick('for update of i');
        if (!candidate) break;
        // The slots counted again once the item is locked (PostgreSQL; count(*) is a bigint, which
        // its driver gives as a string). On SQLite the pick's own count is this one: its
        // transaction runs alone, at the same `at`.
        if (onPostgres(tx)) {
          const [slots] = await sqlRows<{ taken: string }>(tx,
            sql`select count(*) as taken from annotation_item_progress p where p.item_id = ${candidate.id} and ${occupying(at)} and ${countedWork(queue.access)}`);
          if (Number(slots!.taken) >= Number(candidate.annotations_required)) {
            passedOver.push(candidate.id);
            continue;
          }
        }
        await recordProgress(tx, candidate, { annotatorId: userId, state: 'in_progress', action: 'insert', leaseSeconds: queue.lease_seconds, now });
        record(queueEvent('progress', { projectId, queueId, itemId: candidate.id }), itemProgressed({ item: candidate, annotatorId: userId, state: 'in_progress' }));
        return toItemDto({ ...candidate, state: 'in_progress', state_annotator_user_id: userId });
      }
    }
    return null;
  });
}
