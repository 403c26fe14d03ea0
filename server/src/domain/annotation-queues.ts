import type { InferEntity } from '@mikro-orm/core';
import type { AnnotationQueue, AnnotationQueueCreateReq, AnnotationQueueQueryReq, AnnotationQueueUpdateReq } from '@loupe/shared';
import type { AuthUser } from '../auth/authenticate.ts';
import { AnnotationQueueRecord } from '../db/entities.ts';
import type { Em } from '../db/orm.ts';
import { onPostgres, sqlRows, type SqlScope } from '../db/sql.ts';
import { ensureProject, requireProjectAccess } from './access.ts';
import { resolveSpecRef } from './annotation-specs.ts';
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

/** The queue named in a path: it must exist in that project and not be deleted (else 404). */
export async function liveQueue(em: Em, projectId: string, queueId: string): Promise<QueueRow> {
  const row = await em.findOne(AnnotationQueueRecord, { id: queueId, projectId, deletedAt: null });
  if (!row) throw notFound(`Annotation queue "${queueId}" does not exist in project ${projectId}.`);
  return row;
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
export function queueWriteLockTerm(em: SqlScope, queueId: string): { sql: string; params: unknown[] } {
  return onPostgres(em) ? { sql: ', pg_advisory_xact_lock_shared(hashtextextended(?, 0))', params: [queueLockKey(queueId)] } : { sql: '', params: [] };
}

/** Takes the locks of several queues shared (PostgreSQL), in one order for every writer. */
export async function lockQueuesForWrite(em: SqlScope, queueIds: Iterable<string>): Promise<void> {
  if (!onPostgres(em)) return;
  const keys = [...new Set(queueIds)].sort().map(queueLockKey);
  if (!keys.length) return;
  await sqlRows(em, 'select count(pg_advisory_xact_lock_shared(hashtextextended(k, 0))) as n from unnest(?::text[]) as k', [keys]);
}

/**
 * What claiming needs of a live queue, read with one bound statement (the hot path skips the
 * entity manager's unit of work); 404 like liveQueue.
 */
export async function queueSettings(em: SqlScope, projectId: string, queueId: string): Promise<{ annotationsPerItem: number; leaseSeconds: number }> {
  const [row] = await sqlRows<{ annotations_per_item: number; lease_seconds: number }>(
    em,
    'select annotations_per_item, lease_seconds from annotation_queues where id = ? and project_id = ? and deleted_at is null',
    [queueId, projectId],
  );
  if (!row) throw notFound(`Annotation queue "${queueId}" does not exist in project ${projectId}.`);
  return { annotationsPerItem: Number(row.annotations_per_item), leaseSeconds: Number(row.lease_seconds) };
}

async function checkScorerRefs(em: Em, projectId: string, refs: readonly string[]): Promise<void> {
  for (const [index, ref] of refs.entries()) await resolveSpecRef(em, projectId, ref, `scorer_refs[${index}]`);
}

export async function createQueue(em: Em, user: AuthUser, req: AnnotationQueueCreateReq): Promise<{ id: string }> {
  requireProjectAccess(user, req.project_id, 'write');
  const scorerRefs = req.scorer_refs ?? [];
  await checkScorerRefs(em, req.project_id, scorerRefs);
  const now = new Date();
  const id = newId();
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
      createdBy: user.id,
      updatedAt: now,
      deletedAt: null,
    });
  });
  return { id };
}

export async function queryQueues(em: Em, user: AuthUser, req: AnnotationQueueQueryReq, page: Page): Promise<AnnotationQueue[]> {
  requireProjectAccess(user, req.project_id, 'read');
  const name = req.name?.trim().toLowerCase();
  const qb = em
    .createQueryBuilder(AnnotationQueueRecord)
    .where({ projectId: req.project_id, deletedAt: null })
    .orderBy({ createdAt: 'desc', id: 'desc' })
    .limit(page.limit)
    .offset(page.offset);
  // A case-insensitive substring that means the same on SQLite and PostgreSQL: lower() on both
  // sides and LIKE with an explicit escape character.
  if (name) qb.andWhere(`lower(name) like ? escape '!'`, [`%${name.replace(/[!%_]/g, (c) => `!${c}`)}%`]);
  return (await qb.getResultList()).map(toQueueDto);
}

export async function readQueue(em: Em, user: AuthUser, projectId: string, queueId: string): Promise<AnnotationQueue> {
  requireProjectAccess(user, projectId, 'read');
  return toQueueDto(await liveQueue(em, projectId, queueId));
}

export async function updateQueue(em: Em, user: AuthUser, req: AnnotationQueueUpdateReq): Promise<AnnotationQueue> {
  requireProjectAccess(user, req.project_id, 'write');
  const row = await liveQueue(em, req.project_id, req.queue_id);
  if (req.scorer_refs) await checkScorerRefs(em, req.project_id, req.scorer_refs);
  if (req.name !== undefined) row.name = req.name;
  if (req.description !== undefined) row.description = req.description;
  if (req.scorer_refs !== undefined) row.scorerRefs = req.scorer_refs;
  if (req.annotations_per_item !== undefined) row.annotationsPerItem = req.annotations_per_item;
  if (req.lease_seconds !== undefined) row.leaseSeconds = req.lease_seconds;
  row.updatedAt = new Date();
  await em.flush();
  return toQueueDto(row);
}

/**
 * Soft delete: the queue and its items answer 404 from now on. Waits for the writes into the
 * queue that are under way (see queueWriteLockTerm).
 */
export async function deleteQueue(em: Em, user: AuthUser, projectId: string, queueId: string): Promise<AnnotationQueue> {
  requireProjectAccess(user, projectId, 'write');
  return em.transactional(async (tx) => {
    if (onPostgres(tx)) await sqlRows(tx, 'select pg_advisory_xact_lock(hashtextextended(?, 0))', [queueLockKey(queueId)]);
    const row = await liveQueue(tx, projectId, queueId);
    row.deletedAt = new Date();
    row.updatedAt = row.deletedAt;
    return toQueueDto(row);
  });
}
