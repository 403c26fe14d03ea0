import { splitProjectId, type AnnotationQueue, type AnnotationQueueCreateReq, type AnnotationQueueQueryReq, type AnnotationQueueUpdateReq, type QueueAccess } from '@loupe/shared';
import { AnnotationQueueRecord } from '../db/entities.ts';
import type { Em } from '../db/orm.ts';
import {
  byText,
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
import { invalid, notFound } from './errors.ts';
import type { Page } from './paging.ts';
import { newId } from './ids.ts';
import { countedWork, openTo } from './queue-access.ts';

export const DEFAULT_ANNOTATIONS_PER_ITEM = 1;
export const DEFAULT_LEASE_SECONDS = 900;
export const DEFAULT_ACCESS: QueueAccess = 'open';
export const DEFAULT_OVERLAP_COVERAGE = 1;

/** A queue as QUEUE_COLUMNS read it: times and the JSON of scorer_refs as the driver gives them (see sql.ts). */
export type QueueRow = {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  scorer_refs: unknown;
  annotations_per_item: number;
  lease_seconds: number;
  access: QueueAccess;
  overlap_coverage: number;
  created_at: unknown;
  created_by: string;
  updated_at: unknown;
  deleted_at: unknown;
};

export const QUEUE_COLUMNS = sql`id, project_id, name, description, scorer_refs, annotations_per_item, lease_seconds, access, overlap_coverage,
  created_at, created_by, updated_at, deleted_at`;

/** A queue's answer, with its assignees (in code-unit order, read with assigneesOf). */
export function toQueueDto(row: QueueRow, assignees: readonly string[]): AnnotationQueue {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    description: row.description ?? null,
    scorer_refs: jsonFromSql<string[]>(row.scorer_refs),
    annotations_per_item: Number(row.annotations_per_item),
    lease_seconds: Number(row.lease_seconds),
    access: row.access,
    assignees: [...assignees],
    overlap_coverage: Number(row.overlap_coverage),
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

/** The assignees of these queues, each list in code-unit order. */
export async function assigneesOf(db: SqlScope, queueIds: readonly string[]): Promise<Map<string, string[]>> {
  const byQueue = new Map<string, string[]>(queueIds.map((id) => [id, []]));
  const ids = [...byQueue.keys()];
  for (let start = 0; start < ids.length; start += 500) {
    const rows = await sqlRows<{ queue_id: string; user_id: string }>(db,
      sql`select queue_id, user_id from annotation_queue_assignees where queue_id in (${sql.list(ids.slice(start, start + 500))})`);
    for (const row of rows) byQueue.get(row.queue_id)!.push(row.user_id);
  }
  for (const list of byQueue.values()) list.sort(byText);
  return byQueue;
}

/** Queues' answers, their assignees read in one go. */
export async function queueDtos(db: SqlScope, rows: readonly QueueRow[]): Promise<AnnotationQueue[]> {
  if (!rows.length) return [];
  const assignees = await assigneesOf(db, rows.map((row) => row.id));
  return rows.map((row) => toQueueDto(row, assignees.get(row.id) ?? []));
}

/**
 * Users who may be given work in a project (assignees, per-item assignment): its entity's admins,
 * members and annotators, not its viewers (contract 5.11). 400 naming the first other id, `field`
 * naming where it was given.
 */
export async function requireWorkers(db: SqlScope, { projectId, userIds, field }: { projectId: string; userIds: readonly string[]; field: (index: number) => string }): Promise<void> {
  const ids = [...new Set(userIds)];
  if (!ids.length) return;
  const { entity } = splitProjectId(projectId);
  const roles = new Map<string, string>();
  for (let start = 0; start < ids.length; start += 500) {
    const rows = await sqlRows<{ user_id: string; role: string }>(db,
      sql`select user_id, role from memberships where entity = ${entity} and user_id in (${sql.list(ids.slice(start, start + 500))})`);
    for (const row of rows) roles.set(row.user_id, row.role);
  }
  for (const [index, userId] of userIds.entries()) {
    const role = roles.get(userId);
    if (!role) throw invalid(`${field(index)}: user "${userId}" is not a member of entity "${entity}".`);
    if (role === 'viewer') throw invalid(`${field(index)}: user "${userId}" is a viewer of entity "${entity}"; only admins, members and annotators work queues.`);
  }
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
  const assignees = [...new Set(req.assignees ?? [])];
  await requireWorkers(em, { projectId: req.project_id, userIds: req.assignees ?? [], field: (index) => `assignees[${index}]` });
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
      access: req.access ?? DEFAULT_ACCESS,
      overlapCoverage: req.overlap_coverage ?? DEFAULT_OVERLAP_COVERAGE,
      createdAt: now,
      createdBy: userId,
      updatedAt: now,
      deletedAt: null,
    });
    // The queue's row first: its assignees refer to it.
    await tx.flush();
    await insertAssignees(tx, { queueId: id, userIds: assignees, now });
    await events.publish(tx, [event]);
  });
  events.committed([event]);
  return { id };
}

export async function queryQueues(
  db: SqlScope,
  { req, page, openOnlyTo }: { req: AnnotationQueueQueryReq; page: Pick<Page, 'limit' | 'offset' | 'bytes'>; openOnlyTo?: string },
): Promise<AnnotationQueue[]> {
  const where = [sql`project_id = ${req.project_id} and deleted_at is null`];
  // An annotator lists the queues open to them (contract 5.11).
  if (openOnlyTo !== undefined) where.push(sql`id in (select q.id from annotation_queues q where q.project_id = ${req.project_id} and ${openTo(openOnlyTo)})`);
  // A case-insensitive substring that means the same on SQLite and PostgreSQL: lower() on both
  // sides and LIKE with an explicit escape character.
  const name = req.name?.trim().toLowerCase();
  if (name) where.push(sql`lower(name) like ${`%${name.replace(/[!%_]/g, (c) => `!${c}`)}%`} escape '!'`);
  const rest = sql`from annotation_queues where ${sql.join(where, ' and ')} order by created_at desc, id desc limit ${page.limit} offset ${page.offset}`;
  // Queues are listed by offset, without a cursor to tell of a page cut short: a page past the budget is refused.
  const sizes = await sqlRows<{ bytes: number | string }>(db, sql`select ${queueBytes(db)} as bytes ${rest}`);
  const total = sizes.reduce((sum, row) => sum + Number(row.bytes), 0);
  requireAnswerFits({ what: 'queues', bytes: total, budget: page.bytes, narrower: 'ask for fewer with a smaller limit' });
  return queueDtos(db, await sqlRows<QueueRow>(db, sql`select ${QUEUE_COLUMNS} ${rest}`));
}

/** The bytes of a queue's JSON in an answer, as stored, plus field names, times and ids. */
export const queueBytes = perDialect((db) => {
  const text = ['name', 'description', 'id', 'project_id', 'created_by'];
  return sql`${sql.join([storedBytes(db, 'scorer_refs', 'json'), ...text.map((column) => storedBytes(db, column))], ' + ')} + ${sql.raw(String(QUEUE_FRAME_BYTES))}`;
});

/** Field names, punctuation, numbers and times of a queue's JSON. */
const QUEUE_FRAME_BYTES = 400;

export async function readQueue(db: SqlScope, projectId: string, queueId: string): Promise<AnnotationQueue> {
  const [queue] = await queueDtos(db, [await liveQueue(db, projectId, queueId)]);
  return queue!;
}

async function insertAssignees(db: SqlScope, { queueId, userIds, now }: { queueId: string; userIds: readonly string[]; now: Date }): Promise<void> {
  for (let start = 0; start < userIds.length; start += 500) {
    const rows = userIds.slice(start, start + 500).map((userId) => sql`(${queueId}, ${userId}, ${sqlDate(db, now)})`);
    await sqlRun(db, sql`insert into annotation_queue_assignees (queue_id, user_id, created_at) values ${sql.join(rows, ', ')} on conflict do nothing`);
  }
}

/**
 * Changes a queue's fields: the check that it is live and the change in one transaction, the
 * change through typed Kysely (the entity's types; scorer_refs written as JSON).
 *
 * A change of who may work the queue (access, assignees) holds the queue's lock exclusive, as a
 * delete does (PostgreSQL): claims and progress under way finish first, and those after it see the
 * new assignees. Whoever no longer may work an assigned queue has their live leases released (the
 * lease ends now) and their per-item assignments cleared, so that others claim those items; their
 * finished work stays and stops counting (queue-access.ts), and each item's shown state is again
 * that of its latest counted record.
 */
export async function updateQueue(em: Em, req: AnnotationQueueUpdateReq, events: QueueEventPublisher): Promise<AnnotationQueue> {
  if (req.scorer_refs) await checkScorerRefs(em, req.project_id, req.scorer_refs);
  if (req.assignees) await requireWorkers(em, { projectId: req.project_id, userIds: req.assignees, field: (index) => `assignees[${index}]` });
  const workers = req.access !== undefined || req.assignees !== undefined;
  return publishingTransaction(em, events, async (tx, record) => {
    if (workers && onPostgres(tx)) await sqlRows(tx, sql`select pg_advisory_xact_lock(hashtextextended(${queueLockKey(req.queue_id)}, 0))`);
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
        ...(req.access !== undefined ? { access: req.access } : {}),
        ...(req.overlap_coverage !== undefined ? { overlap_coverage: req.overlap_coverage } : {}),
      })
      .where('id', '=', row.id)
      .execute();
    if (req.assignees !== undefined) {
      const wanted = [...new Set(req.assignees)];
      await sqlRun(tx, sql`delete from annotation_queue_assignees where queue_id = ${row.id}${wanted.length ? sql` and user_id not in (${sql.list(wanted)})` : sql``}`);
      await insertAssignees(tx, { queueId: row.id, userIds: wanted, now: updatedAt });
    }
    if (workers) await settleWorkers(tx, { queueId: row.id, access: req.access ?? row.access, now: updatedAt });
    record(queueEvent('queue_updated', { projectId: req.project_id, queueId: row.id }));
    const [updated] = await liveQueues(tx, req.project_id, [row.id]);
    const [dto] = await queueDtos(tx, [updated!]);
    return dto!;
  });
}

/** After a change of who may work a queue: leases and assignments of those who may not, and the items' shown states (see updateQueue). */
async function settleWorkers(tx: SqlScope, { queueId, access, now }: { queueId: string; access: QueueAccess; now: Date }): Promise<void> {
  const at = sqlDate(tx, now);
  if (access === 'assigned') {
    await sqlRun(tx, sql`update annotation_item_progress set lease_expires_at = ${at}
      where queue_id = ${queueId} and state = 'in_progress' and lease_expires_at > ${at}
        and not exists (select 1 from annotation_queue_assignees a where a.queue_id = ${queueId} and a.user_id = annotation_item_progress.annotator_user_id)`);
    await sqlRun(tx, sql`update annotation_queue_items set assigned_user_id = null
      where queue_id = ${queueId} and assigned_user_id is not null
        and not exists (select 1 from annotation_queue_assignees a where a.queue_id = ${queueId} and a.user_id = annotation_queue_items.assigned_user_id)`);
  }
  // The latest counted record of each item whose shown state is another's: one not counted (any
  // more), or older than a record that counts (again).
  const counted = countedWork(access);
  const latest = (column: string) => sql`(select ${sql.raw(`p.${column}`)} from annotation_item_progress p
      where p.item_id = annotation_queue_items.id and ${counted} order by p.updated_at desc, p.annotator_user_id desc limit 1)`;
  const shownIsCounted = access === 'assigned'
    ? sql`exists (select 1 from annotation_queue_assignees a where a.queue_id = ${queueId} and a.user_id = annotation_queue_items.state_annotator_user_id)`
    : sql`1 = 1`;
  await sqlRun(tx, sql`update annotation_queue_items
      set state = coalesce(${latest('state')}, 'unstarted'), state_annotator_user_id = ${latest('annotator_user_id')}, state_updated_at = ${latest('updated_at')}
    where queue_id = ${queueId} and deleted_at is null
      and ((state_annotator_user_id is not null and not ${shownIsCounted})
        or exists (select 1 from annotation_item_progress p where p.item_id = annotation_queue_items.id and ${counted}
                     and (annotation_queue_items.state_updated_at is null or p.updated_at > annotation_queue_items.state_updated_at)))`);
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
    const [dto] = await queueDtos(tx, [{ ...row, deleted_at: now, updated_at: now }]);
    return dto!;
  });
}
