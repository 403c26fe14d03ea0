import type { AnnotationQueue, AnnotationQueueCreateReq, AnnotationQueueQueryReq, AnnotationQueueUpdateReq } from '@loupe/shared';
import { AnnotationQueueRecord } from '../db/entities.ts';
import type { Em } from '../db/orm.ts';
import {
  isoFromSql,
  isoOrNullFromSql,
  jsonFromSql,
  onPostgres,
  perDialect,
  sqlDate,
  sqlRows,
  sqlRun,
  storedBytes,
  typedKysely,
  type SqlScope,
} from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { publishingTransaction, queueEvent, type QueueEventPublisher } from './queue-events.ts';
import { ensureProject } from './access.ts';
import { resolveSpecRef } from './annotation-specs.ts';
import { requireAnswerFits } from './answer-budget.ts';
import { notFound } from './errors.ts';
import type { Page } from './paging.ts';
import { newId } from './ids.ts';

export const DEFAULT_ANNOTATIONS_PER_ITEM = 1;
export const DEFAULT_LEASE_SECONDS = 900;

/** A queue as QUEUE_COLUMNS read it: times and the JSON of scorer_refs as the driver gives them (see sql.ts). */
export type QueueRow = {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  scorer_refs: unknown;
  annotations_per_item: number;
  lease_seconds: number;
  created_at: unknown;
  created_by: string;
  updated_at: unknown;
  deleted_at: unknown;
};

const QUEUE_COLUMNS = sql`id, project_id, name, description, scorer_refs, annotations_per_item, lease_seconds, created_at, created_by, updated_at, deleted_at`;

export function toQueueDto(row: QueueRow): AnnotationQueue {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    description: row.description ?? null,
    scorer_refs: jsonFromSql<string[]>(row.scorer_refs),
    annotations_per_item: Number(row.annotations_per_item),
    lease_seconds: Number(row.lease_seconds),
    created_at: isoFromSql(row.created_at),
    created_by: row.created_by,
    updated_at: isoFromSql(row.updated_at),
    deleted_at: isoOrNullFromSql(row.deleted_at),
  };
}

/**
 * The live queues of a project with these ids, in the order asked: each must exist in that
 * project and not be deleted, else 404 (for the first one that does not). The one check of a
 * named queue, for the ORM's jobs and the SQL ones alike. On the write paths (items, progress,
 * claims), so in the `sql` template.
 */
export async function liveQueues(db: SqlScope, projectId: string, queueIds: readonly string[]): Promise<QueueRow[]> {
  if (!queueIds.length) return [];
  const rows = await sqlRows<QueueRow>(
    db,
    sql`select ${QUEUE_COLUMNS} from annotation_queues where id in (${sql.list(queueIds)}) and project_id = ${projectId} and deleted_at is null`,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return queueIds.map((id) => {
    const row = byId.get(id);
    if (!row) throw notFound(`Annotation queue "${id}" does not exist in project ${projectId}.`);
    return row;
  });
}

/** The live queue named in a path (see liveQueues). */
export async function liveQueue(db: SqlScope, projectId: string, queueId: string): Promise<QueueRow> {
  const [queue] = await liveQueues(db, projectId, [queueId]);
  return queue!;
}

// Writes into a queue against its deletion. On PostgreSQL every transaction that writes into a
// queue (items, progress, claims, feedback naming it) holds the queue's advisory lock shared and
// checks that the queue is live with a statement that begins after it holds the lock; deleteQueue
// holds the lock exclusive. A delete therefore waits for the writes that found the queue live,
// and a write that comes after it finds the queue deleted: no write lands in a deleted queue.
// An advisory lock, not a row lock on the queue: it writes nothing to disk, where a shared row lock
// held by many concurrent writers makes PostgreSQL create a multixact for each of them. SQLite
// needs neither: its write transactions begin immediate and run one at a time, checks included.

const queueLockKey = (queueId: string) => `queue ${queueId}`;

/**
 * A select-list term that takes the queue's lock shared while the statement runs (PostgreSQL),
 * with its parameter; nothing on SQLite. The check that the queue is live must come in a later
 * statement: this one's snapshot may predate a delete it waited for.
 */
export function queueWriteLockTerm(db: SqlScope, queueId: string): Statement {
  return onPostgres(db) ? sql`, pg_advisory_xact_lock_shared(hashtextextended(${queueLockKey(queueId)}, 0))` : sql``;
}

/** Takes the locks of several queues shared (PostgreSQL), in one order for every writer. */
export async function lockQueuesForWrite(db: SqlScope, queueIds: Iterable<string>): Promise<void> {
  if (!onPostgres(db)) return;
  const keys = [...new Set(queueIds)].sort().map(queueLockKey);
  if (!keys.length) return;
  await sqlRows(db, sql`select count(pg_advisory_xact_lock_shared(hashtextextended(k, 0))) as n from unnest(${keys}::text[]) as k`);
}

async function checkScorerRefs(em: Em, projectId: string, refs: readonly string[]): Promise<void> {
  for (const [index, ref] of refs.entries()) await resolveSpecRef(em, { projectId, ref, field: `scorer_refs[${index}]` });
}

/** Creating a queue is a `queue_updated` of it: streams of its project learn that it appeared. */
export async function createQueue(
  em: Em,
  { req, userId, events }: { req: AnnotationQueueCreateReq; userId: string; events: QueueEventPublisher },
): Promise<{ id: string }> {
  const scorerRefs = req.scorer_refs ?? [];
  await checkScorerRefs(em, req.project_id, scorerRefs);
  const now = new Date();
  const id = newId();
  const event = queueEvent('queue_updated', { projectId: req.project_id, queueId: id });
  await em.transactional(async (tx) => {
    await ensureProject(tx, req.project_id);
    tx.create(AnnotationQueueRecord, {
      id,
      projectId: req.project_id,
      name: req.name,
      description: req.description ?? null,
      scorerRefs,
      annotationsPerItem: req.annotations_per_item ?? DEFAULT_ANNOTATIONS_PER_ITEM,
      leaseSeconds: req.lease_seconds ?? DEFAULT_LEASE_SECONDS,
      createdAt: now,
      createdBy: userId,
      updatedAt: now,
      deletedAt: null,
    });
    await events.publish(tx, [event]);
  });
  events.committed([event]);
  return { id };
}

export async function queryQueues(db: SqlScope, req: AnnotationQueueQueryReq, page: Pick<Page, 'limit' | 'offset' | 'bytes'>): Promise<AnnotationQueue[]> {
  const where = [sql`project_id = ${req.project_id} and deleted_at is null`];
  // A case-insensitive substring that means the same on SQLite and PostgreSQL: lower() on both
  // sides and LIKE with an explicit escape character.
  const name = req.name?.trim().toLowerCase();
  if (name) where.push(sql`lower(name) like ${`%${name.replace(/[!%_]/g, (c) => `!${c}`)}%`} escape '!'`);
  const rest = sql`from annotation_queues where ${sql.join(where, ' and ')} order by created_at desc, id desc limit ${page.limit} offset ${page.offset}`;
  // Queues are listed by offset, without a cursor to tell of a page cut short: a page past the budget is refused.
  const sizes = await sqlRows<{ bytes: number | string }>(db, sql`select ${queueBytes(db)} as bytes ${rest}`);
  const total = sizes.reduce((sum, row) => sum + Number(row.bytes), 0);
  requireAnswerFits({ what: 'queues', bytes: total, budget: page.bytes, narrower: 'ask for fewer with a smaller limit' });
  return (await sqlRows<QueueRow>(db, sql`select ${QUEUE_COLUMNS} ${rest}`)).map(toQueueDto);
}

/** The bytes of a queue's JSON in an answer, as stored, plus field names, times and ids. */
const queueBytes = perDialect((db) => {
  const text = ['name', 'description', 'id', 'project_id', 'created_by'];
  return sql`${sql.join([storedBytes(db, 'scorer_refs', 'json'), ...text.map((column) => storedBytes(db, column))], ' + ')} + ${sql.raw(String(QUEUE_FRAME_BYTES))}`;
});

/** Field names, punctuation, numbers and times of a queue's JSON. */
const QUEUE_FRAME_BYTES = 320;

export async function readQueue(db: SqlScope, projectId: string, queueId: string): Promise<AnnotationQueue> {
  return toQueueDto(await liveQueue(db, projectId, queueId));
}

/**
 * Changes a queue's fields: the check that it is live and the change in one transaction, the
 * change through typed Kysely (the entity's types; scorer_refs written as JSON).
 */
export async function updateQueue(em: Em, req: AnnotationQueueUpdateReq, events: QueueEventPublisher): Promise<AnnotationQueue> {
  if (req.scorer_refs) await checkScorerRefs(em, req.project_id, req.scorer_refs);
  return publishingTransaction(em, events, async (tx, record) => {
    const row = await liveQueue(tx, req.project_id, req.queue_id);
    const updatedAt = new Date();
    await typedKysely(tx)
      .updateTable('annotation_queues')
      .set({
        updated_at: updatedAt,
        ...(req.name !== undefined ? { name: req.name } : {}),
        ...(req.description !== undefined ? { description: req.description } : {}),
        ...(req.scorer_refs !== undefined ? { scorer_refs: req.scorer_refs } : {}),
        ...(req.annotations_per_item !== undefined ? { annotations_per_item: req.annotations_per_item } : {}),
        ...(req.lease_seconds !== undefined ? { lease_seconds: req.lease_seconds } : {}),
      })
      .where('id', '=', row.id)
      .execute();
    record(queueEvent('queue_updated', { projectId: req.project_id, queueId: row.id }));
    const [updated] = await liveQueues(tx, req.project_id, [row.id]);
    return toQueueDto(updated!);
  });
}

/**
 * Soft delete: the queue and its items answer 404 from now on. Waits for the writes into the
 * queue that are under way (see queueWriteLockTerm).
 */
export async function deleteQueue(
  db: SqlScope,
  { projectId, queueId, events }: { projectId: string; queueId: string; events: QueueEventPublisher },
): Promise<AnnotationQueue> {
  return publishingTransaction(db, events, async (tx, record) => {
    if (onPostgres(tx)) await sqlRows(tx, sql`select pg_advisory_xact_lock(hashtextextended(${queueLockKey(queueId)}, 0))`);
    const row = await liveQueue(tx, projectId, queueId);
    const now = new Date();
    await sqlRun(tx, sql`update annotation_queues set deleted_at = ${sqlDate(tx, now)}, updated_at = ${sqlDate(tx, now)} where id = ${queueId}`);
    record(queueEvent('queue_updated', { projectId, queueId }));
    return toQueueDto({ ...row, deleted_at: now, updated_at: now });
  });
}
