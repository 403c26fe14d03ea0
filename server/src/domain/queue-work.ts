import { sqlDate, sqlRows, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { REQUIRED_FROM_QUEUE } from './coverage.ts';
import { COUNTED_IN_QUEUE } from './queue-access.ts';

// How far the live items of queues are, and each worker's share (contract 5.2's stats, 5.11's
// by_assignee and annotationQueues.mine). Only the work that counts in a queue is counted: every
// record of an open queue, the assignees' of an assigned one (queue-access.ts). An item is done
// when its counted finished (completed or skipped) annotators reach its quota, and open while they
// do not.

type Count = number | string;

/** Each live item of the queues with its quota and its counted finished annotators (items `i`, queues `q`). */
const itemsDone = (queueIds: readonly string[]) => sql`select i.id, i.queue_id, i.assigned_user_id, ${REQUIRED_FROM_QUEUE} as required,
    (select count(*) from annotation_item_progress p where p.item_id = i.id and p.state in ('completed', 'skipped') and ${COUNTED_IN_QUEUE}) as done_n
  from annotation_queue_items i join annotation_queues q on q.id = i.queue_id
  where i.queue_id in (${sql.list(queueIds)}) and i.deleted_at is null`;

/** Per queue: its live items, those finished by at least one counted annotator, those done, and the open ones by who they are assigned to. */
export type ItemTally = {
  totalItems: number;
  finishedItems: number;
  doneItems: number;
  /** Open items assigned to nobody. */
  openPool: number;
  /** Per user items are assigned to: how many, and how many of them are open. */
  assigned: Map<string, { items: number; open: number }>;
};

/** Per queue and counted annotator: their records of live items by state, live leases, and finished items still open to them. */
export type WorkerTally = { completed: number; skipped: number; inProgress: number; leased: number; finishedOpen: number };

export async function itemTallies(db: SqlScope, queueIds: readonly string[]): Promise<Map<string, ItemTally>> {
  const tallies = new Map<string, ItemTally>(queueIds.map((id) => [id, { totalItems: 0, finishedItems: 0, doneItems: 0, openPool: 0, assigned: new Map() }]));
  if (!queueIds.length) return tallies;
  type Row = { queue_id: string; assigned_user_id: string | null; items: Count; open_items: Count; finished_items: Count; done_items: Count };
  const rows = await sqlRows<Row>(db, sql`select d.queue_id, d.assigned_user_id, count(*) as items,
      sum(case when d.done_n < d.required then 1 else 0 end) as open_items,
      sum(case when d.done_n > 0 then 1 else 0 end) as finished_items,
      sum(case when d.done_n >= d.required then 1 else 0 end) as done_items
    from (${itemsDone(queueIds)}) d
    group by d.queue_id, d.assigned_user_id`);
  for (const row of rows) {
    const tally = tallies.get(row.queue_id)!;
    tally.totalItems += Number(row.items);
    tally.finishedItems += Number(row.finished_items);
    tally.doneItems += Number(row.done_items);
    if (row.assigned_user_id === null) tally.openPool += Number(row.open_items);
    else tally.assigned.set(row.assigned_user_id, { items: Number(row.items), open: Number(row.open_items) });
  }
  return tallies;
}

/** Per queue, per counted annotator (of `userIds` only, when given): see WorkerTally. */
export async function workerTallies(
  db: SqlScope,
  { queueIds, userIds, now }: { queueIds: readonly string[]; userIds?: readonly string[]; now: Date },
): Promise<Map<string, Map<string, WorkerTally>>> {
  const tallies = new Map<string, Map<string, WorkerTally>>(queueIds.map((id) => [id, new Map()]));
  if (!queueIds.length || userIds?.length === 0) return tallies;
  const at = sqlDate(db, now);
  const only = userIds ? sql` and p.annotator_user_id in (${sql.list(userIds)})` : sql``;
  type Row = { queue_id: string; annotator_user_id: string; completed: Count; skipped: Count; in_progress: Count; leased: Count; finished_open: Count };
  const rows = await sqlRows<Row>(db, sql`select p.queue_id, p.annotator_user_id,
      sum(case when p.state = 'completed' then 1 else 0 end) as completed,
      sum(case when p.state = 'skipped' then 1 else 0 end) as skipped,
      sum(case when p.state = 'in_progress' then 1 else 0 end) as in_progress,
      sum(case when p.state = 'in_progress' and p.lease_expires_at > ${at} then 1 else 0 end) as leased,
      sum(case when p.state in ('completed', 'skipped') and d.done_n < d.required
                 and (d.assigned_user_id is null or d.assigned_user_id = p.annotator_user_id) then 1 else 0 end) as finished_open
    from annotation_item_progress p
    join (${itemsDone(queueIds)}) d on d.id = p.item_id
    join annotation_queues q on q.id = p.queue_id
    where p.queue_id in (${sql.list(queueIds)}) and ${COUNTED_IN_QUEUE}${only}
    group by p.queue_id, p.annotator_user_id`);
  for (const row of rows) {
    tallies.get(row.queue_id)!.set(row.annotator_user_id, {
      completed: Number(row.completed),
      skipped: Number(row.skipped),
      inProgress: Number(row.in_progress),
      leased: Number(row.leased),
      finishedOpen: Number(row.finished_open),
    });
  }
  return tallies;
}

/** One worker's share of a queue: 5.11's by_assignee entry, and annotationQueues.mine's counts. */
export type Work = { assigned_items: number; done: number; in_progress: number; remaining: number };

/**
 * `remaining`: the open items assigned to the user or to nobody that the user has not finished
 * (their own in-progress items among them, which are theirs to finish).
 */
export function workOf(items: ItemTally, worker: WorkerTally | undefined, userId: string): Work {
  const assigned = items.assigned.get(userId);
  return {
    assigned_items: assigned?.items ?? 0,
    done: (worker?.completed ?? 0) + (worker?.skipped ?? 0),
    in_progress: worker?.leased ?? 0,
    remaining: items.openPool + (assigned?.open ?? 0) - (worker?.finishedOpen ?? 0),
  };
}
