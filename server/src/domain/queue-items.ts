import type { AnnotationQueueItem, AnnotationQueueItemsAddReq, AnnotationQueueItemsAssignReq, AnnotationQueueItemsQueryReq, AnnotationState, ItemSort } from '@loupe/shared';
import { byText, inList, inLockOrder, isoFromSql, isoOrNullFromSql, jsonFromSql, lockClause, perDialect, sqlDate, sqlRows, sqlRun, storedBytes, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { publishingTransaction, queueEvent, type QueueEventPublisher } from './queue-events.ts';
import { ensureProject } from './access.ts';
import { liveQueue, lockQueuesForWrite, queueWriteLockTerm, requireWorkers } from './annotation-queues.ts';
import { invalid, notFound, tooLarge } from './errors.ts';
import { decodeCursor, encodeCursor, keyset, keysetOrder, queryFingerprint, type DecodedCursor, type KeysetKey } from './cursor.ts';
import { nextCursorOf, type Page } from './paging.ts';
import { budgetedPage } from './answer-budget.ts';
import { newId } from './ids.ts';
import { coveragePoint } from './coverage.ts';

const CHUNK = 500;

/**
 * The columns every item read selects: an ItemRow. The quota is read from the item's queue (a seek
 * on its primary key), so that every read of an item, whatever it joins, answers it alike.
 */
export const ITEM_COLUMNS = sql`i.id, i.project_id, i.queue_id, i.call_id, i.call_started_at, i.call_ended_at, i.call_op_name,
  i.call_trace_id, i.display_fields, i.state, i.state_annotator_user_id, i.added_by, i.created_at, i.created_by,
  i.updated_at, i.deleted_at, i.assigned_user_id,
  (select case when i.coverage_point < rq.overlap_coverage then rq.annotations_per_item else 1 end from annotation_queues rq where rq.id = i.queue_id) as annotations_required`;

/** An item as ITEM_COLUMNS read it: times and the JSON of display_fields as the driver gives them (see sql.ts). */
export type ItemRow = {
  id: string;
  project_id: string;
  queue_id: string;
  call_id: string;
  call_started_at: unknown;
  call_ended_at: unknown;
  call_op_name: string;
  call_trace_id: string;
  display_fields: unknown;
  state: AnnotationQueueItem['annotation_state'];
  state_annotator_user_id: string | null;
  added_by: string;
  created_at: unknown;
  created_by: string;
  updated_at: unknown;
  deleted_at: unknown;
  assigned_user_id: string | null;
  annotations_required: number | string;
};

export function toItemDto(row: ItemRow, position: number | null = null): AnnotationQueueItem {
  return {
    id: row.id,
    project_id: row.project_id,
    queue_id: row.queue_id,
    call_id: row.call_id,
    call_started_at: isoFromSql(row.call_started_at),
    call_ended_at: isoOrNullFromSql(row.call_ended_at),
    call_op_name: row.call_op_name,
    call_trace_id: row.call_trace_id,
    display_fields: jsonFromSql<string[]>(row.display_fields),
    annotation_state: row.state,
    annotator_user_id: row.state_annotator_user_id ?? null,
    added_by: row.added_by,
    created_at: isoFromSql(row.created_at),
    created_by: row.created_by,
    updated_at: isoFromSql(row.updated_at),
    deleted_at: isoOrNullFromSql(row.deleted_at),
    position_in_queue: position,
    assigned_user_id: row.assigned_user_id ?? null,
    annotations_required: Number(row.annotations_required),
  };
}

/**
 * An item as an annotator sees it (contract 5.11, blind by construction): its state is their own
 * (unstarted when they have no record) and the annotator it names is they or nobody, never another
 * annotator whose record happens to be the latest.
 */
export function blindItem(item: AnnotationQueueItem, viewer: { userId: string; state: AnnotationState | null }): AnnotationQueueItem {
  return { ...item, annotation_state: viewer.state ?? 'unstarted', annotator_user_id: viewer.state ? viewer.userId : null };
}

/** The viewer's own states of these items (blindItem). */
export async function ownStates(db: SqlScope, { userId, itemIds }: { userId: string; itemIds: readonly string[] }): Promise<Map<string, AnnotationState>> {
  const states = new Map<string, AnnotationState>();
  for (let start = 0; start < itemIds.length; start += CHUNK) {
    const rows = await sqlRows<{ item_id: string; state: AnnotationState }>(db,
      sql`select item_id, state from annotation_item_progress where annotator_user_id = ${userId} and item_id in (${sql.list(itemIds.slice(start, start + CHUNK))})`);
    for (const row of rows) states.set(row.item_id, row.state);
  }
  return states;
}

const itemNotFound = (projectId: string, queueId: string, itemId: string) =>
  notFound(`Item "${itemId}" does not exist in annotation queue "${queueId}" of project ${projectId}.`);

/** An item as a path names it. */
export type ItemRef = { projectId: string; queueId: string; itemId: string };

/** The item a request names. */
export function itemRefOf(req: { project_id: string; queue_id: string; item_id: string }): ItemRef {
  return { projectId: req.project_id, queueId: req.queue_id, itemId: req.item_id };
}

/**
 * The live item named in a path (in a live queue of that project, whose lease it carries), or 404.
 * `forWrite` locks the item's row and takes the queue's write lock shared (see
 * queueWriteLockTerm: the caller re-checks the queue in a later statement of its transaction).
 */
export async function liveItem(db: SqlScope, { projectId, queueId, itemId }: ItemRef, forWrite = false): Promise<ItemRow & { lease_seconds: number }> {
  const forUpdate = forWrite ? lockClause(db, 'for update of i') : NOTHING;
  const queueLock = forWrite ? queueWriteLockTerm(db, queueId) : NOTHING;
  const rows = await sqlRows<ItemRow & { lease_seconds: number }>(db,
    sql`select ${ITEM_COLUMNS}, q.lease_seconds${queueLock} from annotation_queue_items i
       join annotation_queues q on q.id = i.queue_id
      where i.id = ${itemId} and i.queue_id = ${queueId} and i.project_id = ${projectId} and i.deleted_at is null and q.deleted_at is null${forUpdate}`,
  );
  if (!rows[0]) throw itemNotFound(projectId, queueId, itemId);
  return rows[0];
}

const NOTHING = sql``;

/** The condition, for a write's own statement, that the queue is still live. */
export function queueIsLive(queueId: string): Statement {
  return sql`exists (select 1 from annotation_queues q where q.id = ${queueId} and q.deleted_at is null)`;
}

export type AddItemsResult = { added_count: number; duplicates: string[]; missing_call_ids: string[] };

/**
 * Adds calls to a queue. A call already live in the queue is a duplicate; the partial unique
 * index on (queue_id, call_id) keeps that true under concurrent adds.
 */
export async function addItems(
  db: SqlScope,
  { req, userId, maxCallIds, events }: { req: AnnotationQueueItemsAddReq; userId: string; maxCallIds: number; events: QueueEventPublisher },
): Promise<AddItemsResult> {
  if (req.call_ids.length > maxCallIds) {
    throw tooLarge(`call_ids holds ${req.call_ids.length} ids; at most ${maxCallIds} are accepted in one request. Split it.`);
  }
  await liveQueue(db, req.project_id, req.queue_id);
  // Every occurrence after an id's first is a repeat (one pass: the list may hold many thousands).
  const seen = new Set<string>();
  const repeated: string[] = [];
  for (const id of req.call_ids) {
    if (seen.has(id)) repeated.push(id);
    else seen.add(id);
  }
  const unique = [...seen];
  // Times as the driver gives them, written back as they came.
  type CallRow = { id: string; trace_id: string; op_name: string; started_at: unknown; ended_at: unknown };
  const calls = new Map<string, CallRow>();
  for (let i = 0; i < unique.length; i += CHUNK) {
    const ids = unique.slice(i, i + CHUNK);
    const rows = await sqlRows<CallRow>(db, sql`select id, trace_id, op_name, started_at, ended_at from calls where project_id = ${req.project_id} and id in (${sql.list(ids)})`);
    for (const row of rows) calls.set(row.id, row);
  }
  const missing = unique.filter((id) => !calls.has(id));
  const present = unique.filter((id) => calls.has(id));
  // Item ids (which order the queue) follow the request's order; on PostgreSQL the rows are
  // inserted in call id order (inLockOrder): two adds of the same calls in opposite orders would
  // otherwise each wait for the other's uncommitted (queue_id, call_id) entry (a deadlock).
  const itemIds = new Map(present.map((id) => [id, newId()]));
  const inOrder = inLockOrder(db, present, byText);
  const now = sqlDate(db, new Date());
  const displayFields = JSON.stringify(req.display_fields ?? []);
  const added = new Set<string>();
  await publishingTransaction(db, events, async (tx, record) => {
    // Checked again after the queue's write lock: a delete may have come since the check above.
    await lockQueuesForWrite(tx, [req.queue_id]);
    await liveQueue(tx, req.project_id, req.queue_id);
    await ensureProject(tx, req.project_id);
    for (let i = 0; i < inOrder.length; i += CHUNK) {
      const ids = inOrder.slice(i, i + CHUNK);
      const rows = ids.map((id) => {
        const call = calls.get(id)!;
        const itemId = itemIds.get(id)!;
        return sql`(${sql.list([itemId, req.project_id, req.queue_id, id, call.started_at, call.ended_at ?? null, call.op_name, call.trace_id, displayFields, userId, now, userId, now, coveragePoint(itemId)])})`;
      });
      const inserted = await sqlRows<{ call_id: string }>(tx,
        sql`insert into annotation_queue_items (id, project_id, queue_id, call_id, call_started_at, call_ended_at, call_op_name,
           call_trace_id, display_fields, added_by, created_at, created_by, updated_at, coverage_point)
         values ${sql.join(rows, ', ')}
         on conflict (queue_id, call_id) where deleted_at is null do nothing
         returning call_id`,
      );
      for (const row of inserted) added.add(row.call_id);
    }
    // One event for the whole add, without item ids: clients refetch the queue's items anyway.
    // Webhooks get the ids (rule_id: null, added by hand).
    if (added.size) {
      const addedItemIds = present.filter((id) => added.has(id)).map((id) => itemIds.get(id)!);
      record(
        queueEvent('items_added', { projectId: req.project_id, queueId: req.queue_id }),
        { type: 'annotation_queue.items.added', data: { project_id: req.project_id, queue_id: req.queue_id, item_ids: addedItemIds, rule_id: null } },
      );
    }
  });
  return {
    added_count: added.size,
    duplicates: [...present.filter((id) => !added.has(id)), ...repeated],
    missing_call_ids: missing,
  };
}

const SORT_KEYS: Record<ItemSort['field'], Omit<KeysetKey, 'direction'>> = {
  created_at: { column: 'i.created_at', field: 'created_at', type: 'date' },
  updated_at: { column: 'i.updated_at', field: 'updated_at', type: 'date' },
  call_started_at: { column: 'i.call_started_at', field: 'call_started_at', type: 'date' },
  call_op_name: { column: 'i.call_op_name', field: 'call_op_name', type: 'text' },
};

/** The requested order, with `id` ascending always breaking ties. */
function sortKeys(sort: readonly ItemSort[] | undefined): KeysetKey[] {
  const keys = (sort?.length ? sort : [{ field: 'created_at', direction: 'asc' } as const]).map(
    (key): KeysetKey => ({ ...SORT_KEYS[key.field], direction: key.direction }),
  );
  return [...keys, { column: 'i.id', field: 'id', type: 'text', direction: 'asc' }];
}

/**
 * A page of a queue's items. For an annotator (`blindTo`, contract 5.11) every item shows their own
 * state (blindItem), and the state filter is of their own states.
 */
export async function queryItems(
  db: SqlScope,
  { req, page, blindTo }: { req: AnnotationQueueItemsQueryReq; page: Page; blindTo?: string },
): Promise<{ items: AnnotationQueueItem[]; next_cursor: string | null }> {
  await liveQueue(db, req.project_id, req.queue_id);
  const filter = req.filter ?? {};
  const where = [
    sql`i.queue_id = ${req.queue_id} and i.deleted_at is null`,
    ...inList('i.call_id', filter.call_ids),
    ...inList('i.call_op_name', filter.call_op_names),
    ...inList('i.call_trace_id', filter.call_trace_ids),
    ...inList('i.added_by', filter.added_by),
  ];
  if (filter.annotation_states !== undefined) {
    const states = filter.annotation_states;
    if (!states.length) where.push(sql`1 = 0`);
    else if (blindTo === undefined) where.push(sql`i.state in (${sql.list(states)})`);
    else {
      where.push(sql`coalesce((select p.state from annotation_item_progress p where p.item_id = i.id and p.annotator_user_id = ${blindTo}), 'unstarted') in (${sql.list(states)})`);
    }
  }
  const filtered = where.length > 1;
  const keys = sortKeys(req.sort_by);
  const fingerprint = queryFingerprint({ of: 'items', project_id: req.project_id, queue_id: req.queue_id, filter, keys, blind: blindTo ?? null }, page.seal);
  const cursor = page.cursor === undefined ? undefined : decodeCursor(db, { fingerprint, keys }, page.cursor);
  if (cursor) where.push(keyset(keys, cursor.values, 'after'));
  const read = await budgetedPage(
    {
      db,
      from: sql`annotation_queue_items i`,
      id: sql`i.id`,
      key: sql`i.id`,
      where: sql.join(where, ' and '),
      order: keysetOrder(keys),
      bytes: itemBytes(db),
      name: (id) => `Item "${id}" of annotation queue "${req.queue_id}"`,
      limit: page.limit,
      offset: page.offset,
      budget: page.bytes,
      room: page.room,
    },
    {
      rows: (ids) => sqlRows<ItemRow>(db, sql`select ${ITEM_COLUMNS} from annotation_queue_items i where i.id in (${sql.list(ids)}) and i.deleted_at is null`),
      id: (row) => row.id,
      // Display fields are a flat list of at most 256 strings: their length is their weight.
      density: () => 0,
      convert: (row) => row,
    },
  );
  const rows = read.rows;
  // The rank of the row before the page, when it is known without a query: every position on an
  // unfiltered page follows from it, so that its next cursor carries one even when not asked for.
  const before = cursor ? cursor.position : page.offset;
  let positions: (number | null)[] | undefined;
  if (!filtered && before !== null) positions = rows.map((_, index) => before + index + 1);
  else if (req.include_position) {
    // A cursor without a position (its page was filtered and not ranked) ranks from the queue's start.
    positions = await positionsOf(db, rows, { queueId: req.queue_id, keys, cursor: cursor && cursor.position !== null ? cursor : undefined });
  }
  const own = blindTo === undefined ? undefined : await ownStates(db, { userId: blindTo, itemIds: rows.map((row) => row.id) });
  return {
    items: rows.map((row, index) => {
      const item = toItemDto(row, req.include_position ? (positions?.[index] ?? null) : null);
      return own ? blindItem(item, { userId: blindTo!, state: own.get(row.id) ?? null }) : item;
    }),
    next_cursor: nextCursorOf(read, (row) => encodeCursor({ fingerprint, keys }, row, positions?.at(-1) ?? null)),
  };
}

/** Field names, punctuation, five timestamps, user ids, state, position and quota of an item's JSON. */
const ITEM_FRAME_BYTES = 560;

/**
 * The bytes of an item's JSON in an answer, as stored (items `i`): its display fields and text
 * columns, plus `frameBytes` for what is not stored as text (field names, times, ids, states).
 */
export function itemBytesWithin(frameBytes: number): (db: SqlScope) => Statement {
  return perDialect((db) => {
    const text = ['i.call_op_name', 'i.call_id', 'i.call_trace_id', 'i.project_id', 'i.queue_id', 'i.id'];
    return sql`${sql.join([storedBytes(db, 'i.display_fields', 'json'), ...text.map((column) => storedBytes(db, column))], ' + ')} + ${sql.raw(String(frameBytes))}`;
  });
}

const itemBytes = itemBytesWithin(ITEM_FRAME_BYTES);


/**
 * 1-based ranks of the given rows (a page, in order) over the whole live queue, before every
 * filter. Only the rows up to the page's last row are ranked, and with a cursor that carries its
 * row's rank, only those after the cursor: the cost follows the page's span, not the queue's size.
 * A row that is no longer live by then (a concurrent delete) gets null.
 */
async function positionsOf(
  db: SqlScope,
  rows: readonly ItemRow[],
  { queueId, keys, cursor }: { queueId: string; keys: readonly KeysetKey[]; cursor: DecodedCursor | undefined },
): Promise<(number | null)[]> {
  const last = rows.at(-1);
  if (!last) return [];
  const where = [sql`i.queue_id = ${queueId} and i.deleted_at is null`];
  if (cursor) where.push(keyset(keys, cursor.values, 'after'));
  where.push(keyset(keys, keys.map((key) => last[key.field as keyof ItemRow]), 'not after'));
  const ranked = await sqlRows<{ id: string; position: number | string }>(db,
    sql`select r.id, r.position from (
        select i.id, row_number() over (order by ${keysetOrder(keys)}) as position from annotation_queue_items i where ${sql.join(where, ' and ')}
      ) r where r.id in (${sql.list(rows.map((row) => row.id))})`,
  );
  const base = cursor?.position ?? 0;
  const positions = new Map(ranked.map((row) => [row.id, base + Number(row.position)]));
  return rows.map((row) => positions.get(row.id) ?? null);
}

/** Soft delete of one item; it answers 404 from then on. */
export async function deleteItem(
  db: SqlScope,
  { projectId, queueId, itemId, events }: { projectId: string; queueId: string; itemId: string; events: QueueEventPublisher },
): Promise<AnnotationQueueItem> {
  return publishingTransaction(db, events, async (tx, record) => {
    const row = await liveItem(tx, { projectId, queueId, itemId }, true);
    const now = new Date();
    const changed = await sqlRun(tx,
      sql`update annotation_queue_items set deleted_at = ${sqlDate(tx, now)}, updated_at = ${sqlDate(tx, now)} where id = ${itemId} and ${queueIsLive(queueId)}`,
    );
    if (!changed) throw itemNotFound(projectId, queueId, itemId);
    record(queueEvent('items_deleted', { projectId, queueId, itemId }));
    return toItemDto({ ...row, deleted_at: now, updated_at: now });
  });
}

export type AssignResult = { assigned_count: number; missing_item_ids: string[] };

/**
 * `POST /annotation_queues/{queue_id}/items/assign` (contract 5.11): the named live items of the
 * queue are claimed by `user_id` alone from now on (null: by anyone again). The user must be able
 * to work the queue: an admin, member or annotator of its entity, and an assignee when the queue
 * is assigned (400 otherwise). A lease someone else holds on an item runs on; the item is not handed
 * out again to anyone else.
 */
export async function assignItems(
  db: SqlScope,
  { req, maxItemIds, events }: { req: AnnotationQueueItemsAssignReq; maxItemIds: number; events: QueueEventPublisher },
): Promise<AssignResult> {
  if (req.item_ids.length > maxItemIds) {
    throw tooLarge(`item_ids holds ${req.item_ids.length} ids; at most ${maxItemIds} are accepted in one request. Split it.`);
  }
  const userId = req.user_id;
  if (userId !== null) await requireWorkers(db, { projectId: req.project_id, userIds: [userId], field: () => 'user_id' });
  const ids = [...new Set(req.item_ids)];
  const found = new Set<string>();
  await publishingTransaction(db, events, async (tx, record) => {
    await lockQueuesForWrite(tx, [req.queue_id]);
    const queue = await liveQueue(tx, req.project_id, req.queue_id);
    if (userId !== null && queue.access === 'assigned') {
      const [assignee] = await sqlRows<{ user_id: string }>(tx,
        sql`select user_id from annotation_queue_assignees where queue_id = ${req.queue_id} and user_id = ${userId}`);
      if (!assignee) throw invalid(`user_id: user "${userId}" is not an assignee of annotation queue "${req.queue_id}", which is assigned.`);
    }
    // Rows are locked in id order on PostgreSQL (inLockOrder): two assigns of the same items in
    // other orders would otherwise each wait, chunk after chunk, for rows the other updated.
    const inOrder = inLockOrder(tx, ids, byText);
    for (let start = 0; start < inOrder.length; start += CHUNK) {
      const chunk = inOrder.slice(start, start + CHUNK);
      const rows = await sqlRows<{ id: string }>(tx,
        sql`select id from annotation_queue_items where queue_id = ${req.queue_id} and deleted_at is null and id in (${sql.list(chunk)})`);
      if (!rows.length) continue;
      for (const row of rows) found.add(row.id);
      // The item's own updated_at stays: an assignment, like progress, is not a change of the item's content.
      await sqlRun(tx, sql`update annotation_queue_items set assigned_user_id = ${userId}
        where queue_id = ${req.queue_id} and deleted_at is null and id in (${sql.list(rows.map((row) => row.id))})`);
    }
    if (found.size) record(queueEvent('queue_updated', { projectId: req.project_id, queueId: req.queue_id }));
  });
  return { assigned_count: found.size, missing_item_ids: ids.filter((id) => !found.has(id)) };
}
