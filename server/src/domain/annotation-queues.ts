import type { InferEntity } from '@mikro-orm/core';
import type { AnnotationQueue, AnnotationQueueCreateReq, AnnotationQueueQueryReq, AnnotationQueueUpdateReq } from '@loupe/shared';
import { AnnotationQueueRecord } from '../db/entities.ts';
import type { Em } from '../db/orm.ts';
import { Conditions, dateFromSql, jsonFromSql, onPostgres, placeholders, sqlDate, sqlRows, sqlRun, storedBytes, type SqlScope } from '../db/sql.ts';
import { publishingTransaction, queueEvent, type QueueEventPublisher } from './queue-events.ts';
import { ensureProject } from './access.ts';
import { resolveSpecRef } from './annotation-specs.ts';
import { requireAnswerFits } from './answer-budget.ts';
import { notFound } from './errors.ts';
import type { Page } from './paging.ts';
import { newId } from './ids.ts';

export type QueueRow = InferEntity<typeof AnnotationQueueRecord>;

export const DEFAULT_ANNOTATIONS_PER_ITEM = 1;
export const DEFAULT_LEASE_SECONDS = 900;

export function toQueueDto(row: QueueRow): AnnotationQueue {
  return {
    id: row.id,
    project_id: row.projectId,
    name: row.name,
    description: row.description ?? null,
    scorer_refs: row.scorerRefs,
    annotations_per_item: row.annotationsPerItem,
    lease_seconds: row.leaseSeconds,
    created_at: row.createdAt.toISOString(),
    created_by: row.createdBy,
    updated_at: row.updatedAt.toISOString(),
    deleted_at: row.deletedAt ? row.deletedAt.toISOString() : null,
  };
}

type QueueSqlRow = {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  scorer_refs: unknown;
  annotations_per_item: number | string;
  lease_seconds: number | string;
  created_at: unknown;
  created_by: string;
  updated_at: unknown;
};

const QUEUE_COLUMNS = 'id, project_id, name, description, scorer_refs, annotations_per_item, lease_seconds, created_at, created_by, updated_at';

/**
 * The live queues of a project with these ids, in the order asked: each must exist in that
 * project and not be deleted, else 404 (for the first one that does not). The one check of a
 * named queue, for the ORM's jobs and the SQL ones alike.
 */
export async function liveQueues(db: SqlScope, projectId: string, queueIds: readonly string[]): Promise<QueueRow[]> {
  if (!queueIds.length) return [];
  const rows = await sqlRows<QueueSqlRow>(
    db,
    `select ${QUEUE_COLUMNS} from annotation_queues where id in (${placeholders(queueIds.length)}) and project_id = ? and deleted_at is null`,
    [...queueIds, projectId],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return queueIds.map((id) => {
    const row = byId.get(id);
    if (!row) throw notFound(`Annotation queue "${id}" does not exist in project ${projectId}.`);
    return queueOfSql(row);
  });
}

/** A live queue from its QUEUE_COLUMNS. */
function queueOfSql(row: QueueSqlRow): QueueRow {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    description: row.description,
    scorerRefs: jsonFromSql<string[]>(row.scorer_refs),
    annotationsPerItem: Number(row.annotations_per_item),
    leaseSeconds: Number(row.lease_seconds),
    createdAt: dateFromSql(row.created_at),
    createdBy: row.created_by,
    updatedAt: dateFromSql(row.updated_at),
    deletedAt: null,
  };
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
export function queueWriteLockTerm(db: SqlScope, queueId: string): { sql: string; params: unknown[] } {
  return onPostgres(db) ? { sql: ', pg_advisory_xact_lock_shared(hashtextextended(?, 0))', params: [queueLockKey(queueId)] } : { sql: '', params: [] };
}

/** Takes the locks of several queues shared (PostgreSQL), in one order for every writer. */
export async function lockQueuesForWrite(db: SqlScope, queueIds: Iterable<string>): Promise<void> {
  if (!onPostgres(db)) return;
  const keys = [...new Set(queueIds)].sort().map(queueLockKey);
  if (!keys.length) return;
  await sqlRows(db, 'select count(pg_advisory_xact_lock_shared(hashtextextended(k, 0))) as n from unnest(?::text[]) as k', [keys]);
}

async function checkScorerRefs(em: Em, projectId: string, refs: readonly string[]): Promise<void> {
  for (const [index, ref] of refs.entries()) await resolveSpecRef(em, projectId, ref, `scorer_refs[${index}]`);
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
  const event = queueEvent('queue_updated', req.project_id, id);
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
  const where = new Conditions();
  where.add('project_id = ? and deleted_at is null', req.project_id);
  // A case-insensitive substring that means the same on SQLite and PostgreSQL: lower() on both
  // sides and LIKE with an explicit escape character.
  const name = req.name?.trim().toLowerCase();
  if (name) where.add(`lower(name) like ? escape '!'`, `%${name.replace(/[!%_]/g, (c) => `!${c}`)}%`);
  const rest = `from annotation_queues where ${where.sql} order by created_at desc, id desc limit ? offset ?`;
  const params = [...where.params, page.limit, page.offset];
  // Queues are listed by offset, without a cursor to tell of a page cut short: a page past the budget is refused.
  const sizes = await sqlRows<{ bytes: number | string }>(db, `select ${queueBytes(db)} as bytes ${rest}`, params);
  const total = sizes.reduce((sum, row) => sum + Number(row.bytes), 0);
  requireAnswerFits('queues', total, page.bytes, 'ask for fewer with a smaller limit');
  return (await sqlRows<QueueSqlRow>(db, `select ${QUEUE_COLUMNS} ${rest}`, params)).map((row) => toQueueDto(queueOfSql(row)));
}

/** The bytes of a queue's JSON in an answer, as stored, plus field names, times and ids. */
function queueBytes(db: SqlScope): string {
  const text = ['name', 'description', 'id', 'project_id', 'created_by'];
  return `${[storedBytes(db, 'scorer_refs', 'json'), ...text.map((column) => storedBytes(db, column))].join(' + ')} + ${QUEUE_FRAME_BYTES}`;
}

/** Field names, punctuation, numbers and times of a queue's JSON. */
const QUEUE_FRAME_BYTES = 320;

export async function readQueue(db: SqlScope, projectId: string, queueId: string): Promise<AnnotationQueue> {
  return toQueueDto(await liveQueue(db, projectId, queueId));
}

export async function updateQueue(em: Em, req: AnnotationQueueUpdateReq, events: QueueEventPublisher): Promise<AnnotationQueue> {
  const row = await liveQueue(em, req.project_id, req.queue_id);
  if (req.scorer_refs) await checkScorerRefs(em, req.project_id, req.scorer_refs);
  const changes: Partial<QueueRow> = { updatedAt: new Date() };
  if (req.name !== undefined) changes.name = req.name;
  if (req.description !== undefined) changes.description = req.description;
  if (req.scorer_refs !== undefined) changes.scorerRefs = req.scorer_refs;
  if (req.annotations_per_item !== undefined) changes.annotationsPerItem = req.annotations_per_item;
  if (req.lease_seconds !== undefined) changes.leaseSeconds = req.lease_seconds;
  const event = queueEvent('queue_updated', req.project_id, row.id);
  await em.transactional(async (tx) => {
    await tx.nativeUpdate(AnnotationQueueRecord, { id: row.id }, changes);
    await events.publish(tx, [event]);
  });
  events.committed([event]);
  return toQueueDto({ ...row, ...changes });
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
    if (onPostgres(tx)) await sqlRows(tx, 'select pg_advisory_xact_lock(hashtextextended(?, 0))', [queueLockKey(queueId)]);
    const row = await liveQueue(tx, projectId, queueId);
    const now = new Date();
    await sqlRun(tx, 'update annotation_queues set deleted_at = ?, updated_at = ? where id = ?', [sqlDate(tx, now), sqlDate(tx, now), queueId]);
    record(queueEvent('queue_updated', projectId, queueId));
    return toQueueDto({ ...row, deletedAt: now, updatedAt: now });
  });
}
