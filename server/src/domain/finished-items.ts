import { FINISHED_STATES, type AnnotationQueueFinishedReq, type FinishedItem } from '@loupe/shared';
import { inList, isoFromSql, sqlRows, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { liveQueue } from './annotation-queues.ts';
import { budgetedPage } from './answer-budget.ts';
import { decodeCursor, encodeCursor, keyset, keysetOrder, queryFingerprint, type KeysetKey } from './cursor.ts';
import { nextCursorOf, type Page } from './paging.ts';
import { blindItem, ITEM_COLUMNS, itemBytesWithin, toItemDto, type ItemRow } from './queue-items.ts';

// The caller's own finished items of a queue, the latest finished first: what an annotator walks
// back through to change an answer, in any later session. "Finished" is the caller's own progress
// record (completed or skipped, both final, contract 4.1), and its time is that record's last
// update — not the item's shown state, which may be another annotator's.

/** Latest finished first; the item's id breaks ties. */
const KEYS: KeysetKey[] = [
  { column: 'p.updated_at', field: 'finished_at', type: 'date', direction: 'desc' },
  { column: 'i.id', field: 'id', type: 'text', direction: 'desc' },
];

const FROM = sql`annotation_item_progress p join annotation_queue_items i on i.id = p.item_id`;

type FinishedRow = ItemRow & { my_state: FinishedItem['annotation_state']; finished_at: unknown };

/** `blind`: an annotator (5.11), whose items show their own state (blindItem). */
export async function finishedItems(
  db: SqlScope,
  { userId, blind, req, page }: { userId: string; blind: boolean; req: AnnotationQueueFinishedReq; page: Page },
): Promise<{ finished: FinishedItem[]; next_cursor: string | null }> {
  await liveQueue(db, req.project_id, req.queue_id);
  const states = [...new Set(req.annotation_states ?? FINISHED_STATES)];
  const where: Statement[] = [
    // (queue_id, annotator_user_id) is the progress table's index: the scan is this caller's records in this queue.
    sql`p.queue_id = ${req.queue_id} and p.annotator_user_id = ${userId} and i.deleted_at is null`,
    ...inList('p.state', states),
  ];
  const fingerprint = queryFingerprint({ of: 'finished', project_id: req.project_id, queue_id: req.queue_id, user: userId, states: states.sort() }, page.seal);
  if (page.cursor !== undefined) {
    where.push(keyset(KEYS, decodeCursor(db, { fingerprint, keys: KEYS }, page.cursor).values, 'after'));
  }
  const read = await budgetedPage(
    {
      db,
      from: FROM,
      id: sql`i.id`,
      key: sql`i.id`,
      where: sql.join(where, ' and '),
      order: keysetOrder(KEYS),
      bytes: finishedBytes(db),
      name: (id) => `Item "${id}" of annotation queue "${req.queue_id}"`,
      limit: page.limit,
      offset: page.offset,
      budget: page.bytes,
      room: page.room,
    },
    {
      rows: (ids) =>
        sqlRows<FinishedRow>(
          db,
          sql`select ${ITEM_COLUMNS}, p.state as my_state, p.updated_at as finished_at from ${FROM}
               where p.annotator_user_id = ${userId} and i.id in (${sql.list(ids)})`,
        ),
      id: (row) => row.id,
      density: () => 0, // display fields are a flat list of strings: their length is their weight
      convert: (row) => row,
    },
  );
  return {
    finished: read.rows.map((row) => {
      const item = toItemDto(row);
      return { item: blind ? blindItem(item, { userId, state: row.my_state }) : item, annotation_state: row.my_state, finished_at: isoFromSql(row.finished_at) };
    }),
    next_cursor: nextCursorOf(read, (row) => encodeCursor({ fingerprint, keys: KEYS }, row)),
  };
}

/** An item's JSON beyond its stored text (field names, times, ids, states), with its state and finish time around it. */
const FRAME_BYTES = 640;

const finishedBytes = itemBytesWithin(FRAME_BYTES);
