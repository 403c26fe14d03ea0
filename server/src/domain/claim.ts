import { setTimeout as sleep } from 'node:timers/promises';
import type { AnnotationQueueItem } from '@loupe/shared';
import { lockClause, onPostgres, sqlDate, sqlRows, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { itemProgressed, publishingTransaction, queueEvent, type QueueEventPublisher } from './queue-events.ts';
import { isTransactionConflict } from '../db/unavailable.ts';
import { liveQueue, queueWriteLockTerm } from './annotation-queues.ts';
import { recordProgress } from './progress.ts';
import { ITEM_COLUMNS, toItemDto, type ItemRow } from './queue-items.ts';

/** Progress `p` that occupies a slot of an item at `at`: finished work, or a lease that has not expired. */
const occupying = (at: unknown): Statement => sql`(p.state in ('completed', 'skipped') or (p.state = 'in_progress' and p.lease_expires_at > ${at}))`;
/** Attempts of a claim whose transaction PostgreSQL aborted for a deadlock or a serialization failure. */
const CONFLICT_ATTEMPTS = 4;

/**
 * Hands the caller the next item to annotate (contract 5.2): its own unexpired in-progress item if
 * it has one, else the first item in queue order it has not touched that still has a free slot,
 * recorded as in_progress with a lease.
 *
 * On PostgreSQL a candidate is taken with FOR UPDATE SKIP LOCKED and its slots are counted again
 * after the lock is held: every writer of an item's progress holds that item's lock until it
 * commits, so the recount sees all of them. On SQLite the one connection serialises claims.
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

/** Who claims the next item of which queue. */
type Claim = { userId: string; projectId: string; queueId: string; events: QueueEventPublisher };

async function claimOnce(db: SqlScope, { userId, projectId, queueId, events }: Claim): Promise<AnnotationQueueItem | null> {
  return publishingTransaction(db, events, async (tx, record) => {
    // PostgreSQL: the queue's lock shared (a delete waits for this claim; see annotation-queues.ts),
    // and one claim at a time per (queue, annotator), so that a second concurrent claim of the same
    // annotator finds the first one's item below instead of taking another.
    if (onPostgres(tx)) {
      await sqlRows(tx, sql`select pg_advisory_xact_lock(hashtextextended(${`claim ${queueId} ${userId}`}, 0))${queueWriteLockTerm(tx, queueId)}`);
    }
    // Read after the locks: a queue deleted meanwhile is a 404.
    const queue = await liveQueue(tx, projectId, queueId);
    const now = new Date();
    const at = sqlDate(tx, now);
    const [own] = await sqlRows<ItemRow>(tx, sql`select ${ITEM_COLUMNS} from annotation_item_progress p
         join annotation_queue_items i on i.id = p.item_id
        where p.queue_id = ${queueId} and p.annotator_user_id = ${userId} and p.state = 'in_progress' and p.lease_expires_at > ${at}
          and i.deleted_at is null
        order by i.created_at, i.id limit 1`);
    if (own) return toItemDto(own);

    // Items found full once locked (filled by claims that committed meanwhile) are passed over, and
    // the search goes on: each pass excludes one more item, so it ends, and it answers null only
    // when no item with a free slot is left. (A fixed number of passes could answer null while a
    // claimable item waited behind more filled ones than that.)
    const passedOver: string[] = [];
    for (;;) {
      const exclude = passedOver.length ? sql` and i.id not in (${sql.list(passedOver)})` : sql``;
      const pick = (lock: string) =>
        sqlRows<ItemRow>(tx, sql`select ${ITEM_COLUMNS} from annotation_queue_items i
            where i.queue_id = ${queueId} and i.deleted_at is null${exclude}
              and not exists (select 1 from annotation_item_progress p where p.item_id = i.id and p.annotator_user_id = ${userId})
              and (select count(*) from annotation_item_progress p where p.item_id = i.id and ${occupying(at)}) < ${queue.annotations_per_item}
            order by i.created_at, i.id
            limit 1${lockClause(tx, lock)}`);
      let [candidate] = await pick('for update of i skip locked');
      // SKIP LOCKED also passes over items that other claims hold right now, and with
      // annotations_per_item above 1 such an item may still have a free slot once they commit.
      // Before answering "nothing left", wait for those claims (the recount below decides).
      if (!candidate && onPostgres(tx)) [candidate] = await pick('for update of i');
      if (!candidate) return null;
      // The slots counted again once the item is locked (PostgreSQL; count(*) is a bigint, which its
      // driver gives as a string). On SQLite the pick's own count is this one: its transaction runs
      // alone, at the same `at`.
      if (onPostgres(tx)) {
        const [slots] = await sqlRows<{ taken: string }>(tx,
          sql`select count(*) as taken from annotation_item_progress p where p.item_id = ${candidate.id} and ${occupying(at)}`);
        if (Number(slots!.taken) >= queue.annotations_per_item) {
          passedOver.push(candidate.id);
          continue;
        }
      }
      await recordProgress(tx, candidate, { annotatorId: userId, state: 'in_progress', action: 'insert', leaseSeconds: queue.lease_seconds, now });
      record(queueEvent('progress', { projectId, queueId, itemId: candidate.id }), itemProgressed({ item: candidate, annotatorId: userId, state: 'in_progress' }));
      return toItemDto({ ...candidate, state: 'in_progress', state_annotator_user_id: userId });
    }
  });
}
