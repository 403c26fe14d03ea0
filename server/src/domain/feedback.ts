import { objectRef, type Feedback, type FeedbackCreateReq, type FeedbackCreateRes, type FeedbackQueryReq } from '@loupe/shared';
import type { ValidateFunction } from 'ajv';
import { AnnotationQueueRecord, AnnotationSpecRecord } from '../db/entities.ts';
import type { Em } from '../db/orm.ts';
import {
  isoFromSql,
  jsonAsText,
  byKey,
  byText,
  inLockOrder,
  jsonFromSql,
  onPostgres,
  sqlDate,
  sqliteArrays,
  sqlRows,
  sqlRun,
  sqlRunTogether,
  sqlTransaction,
  perDialect,
  inList,
  storedBytes,
  type SqlScope,
} from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { ensureProject } from './access.ts';
import { conflict, DomainError, forbidden, invalid, notFound } from './errors.ts';
import { lockQueuesForWrite } from './annotation-queues.ts';
import { checkFeedback, lookupsNeeded, noSuchQueue, type FeedbackLookups } from './feedback-rules.ts';
import { contentHash, firstPositions, insertThenCompare, type StoredBatch } from './idempotency.ts';
import { compileFieldSchema } from './json-schema.ts';
import { decodeCursor, encodeCursor, keyset, keysetOrder, queryFingerprint, type KeysetKey } from './cursor.ts';
import { cursorPage, type CursorPage, type Page } from './paging.ts';
import { budgetedPage, jsonDensity } from './answer-budget.ts';
import { newId } from './ids.ts';
import { publishingTransaction, type QueueEventPublisher, type RecordEvent } from './queue-events.ts';
import { addFeedbackRuleItems } from './rule-items.ts';
import { feedbackCreatedWrites, writeFeedbackCreated, type WebhookWake, type WrittenEvent } from './webhook-outbox.ts';

const CHUNK = 1000;
const COLUMNS = [
  'project_id',
  'id',
  'svc_ref',
  'feedback_type',
  'payload',
  'creator',
  'annotation_ref',
  'runnable_ref',
  'call_ref',
  'trigger_ref',
  'queue_id',
  'svc_user_id',
  'created_at',
  'request_hash',
] as const;

type Prepared = {
  key: string;
  /** What a retry is compared by; null for a server-made id, which no retry can name. */
  hash: string | null;
  id: string;
  projectId: string;
  element: FeedbackCreateReq;
  payload: Record<string, unknown>;
  queueId: string | null;
};

/**
 * The content a retry is compared by: as stored, so null and absent are alike, the id is in the
 * case it is stored in, and the ignored svc_user_id does not count.
 */
function retryHash(element: FeedbackCreateReq, id: string): string {
  const content = Object.fromEntries(
    Object.entries({ ...element, id }).filter(([field, value]) => value !== undefined && value !== null && field !== 'svc_user_id'),
  );
  return contentHash(content);
}

/** Answers the rules' lookups for a whole batch with one query per kind. */
async function loadLookups(em: Em, batch: readonly FeedbackCreateReq[]): Promise<FeedbackLookups> {
  const specs = new Map<string, ValidateFunction | null>();
  const queues = new Map<string, boolean>();
  for (const element of batch) {
    const needed = lookupsNeeded(element);
    if (needed.spec) specs.set(`${element.project_id}\u0000${needed.spec.name}\u0000${needed.spec.digest}`, null);
    if (needed.queueId) queues.set(`${element.project_id}\u0000${needed.queueId}`, false);
  }
  if (specs.size) {
    const wanted = [...specs.keys()].map((k) => k.split('\u0000') as [string, string, string]);
    const rows = await em.find(AnnotationSpecRecord, { $or: wanted.map(([projectId, name, digest]) => ({ projectId, name, digest })) });
    for (const row of rows) {
      const cacheKey = `${row.projectId}/${row.name}:${row.digest}`;
      let validate: ValidateFunction;
      try {
        validate = compileFieldSchema(row.fieldSchema, cacheKey);
      } catch (error) {
        // A spec stored before the present bounds on field_schema is refused as a new one would be.
        if (!(error instanceof DomainError)) throw error;
        throw invalid(`annotation spec ${objectRef(row.projectId, row.name, row.digest)} can no longer be used: ${error.message}`);
      }
      specs.set(`${row.projectId}\u0000${row.name}\u0000${row.digest}`, validate);
    }
  }
  if (queues.size) {
    const wanted = [...queues.keys()].map((k) => k.split('\u0000') as [string, string]);
    const rows = await em.find(
      AnnotationQueueRecord,
      { deletedAt: null, $or: wanted.map(([projectId, id]) => ({ projectId, id })) },
      { fields: ['id', 'projectId'] },
    );
    for (const row of rows) queues.set(`${row.projectId}\u0000${row.id}`, true);
  }
  return {
    specSchema: (projectId, name, digest) => specs.get(`${projectId}\u0000${name}\u0000${digest}`) ?? null,
    queueIsLive: (projectId, queueId) => queues.get(`${projectId}\u0000${queueId}`) ?? false,
  };
}

/** How errors name an element: `batch[3].` in a batch, nothing for a single record. */
type Where = (index: number) => string;
const inBatch: Where = (index) => `batch[${index}].`;
const single: Where = () => '';

/** Validates a whole batch before anything is written; the first bad element fails it (400). */
async function prepare(em: Em, batch: readonly FeedbackCreateReq[], { maxPayloadBytes, where }: { maxPayloadBytes: number; where: Where }): Promise<Prepared[]> {
  const lookups = await loadLookups(em, batch);
  return batch.map((element, index) => {
    const checked = checkFeedback(element, { where: where(index), lookups, maxPayloadBytes });
    const id = element.id?.toLowerCase() ?? newId();
    return {
      key: `${element.project_id}\u0000${id}`,
      hash: element.id === undefined ? null : retryHash(element, id),
      id,
      projectId: element.project_id,
      element,
      payload: checked.payload,
      queueId: checked.queueId,
    };
  });
}

/** The columns a row brings itself, with their PostgreSQL types; svc_user_id and created_at are the batch's. */
const ROW_COLUMN_TYPES = {
  project_id: 'text', id: 'text', svc_ref: 'text', feedback_type: 'text', payload: 'jsonb', creator: 'text', annotation_ref: 'text',
  runnable_ref: 'text', call_ref: 'text', trigger_ref: 'text', queue_id: 'text', request_hash: 'text',
} as const;

/**
 * A row's own columns (ROW_COLUMN_TYPES), the payload as an object; a column the element leaves
 * out is undefined, which JSON leaves out and jsonb_to_recordset reads as null (a third less JSON
 * for PostgreSQL to read at batch 1,000 than with every null written).
 */
function rowFields(p: Prepared): Record<keyof typeof ROW_COLUMN_TYPES, unknown> {
  const e = p.element;
  return {
    project_id: p.projectId, id: p.id, svc_ref: e.svc_ref, feedback_type: e.feedback_type, payload: p.payload, creator: e.creator,
    annotation_ref: e.annotation_ref, runnable_ref: e.runnable_ref, call_ref: e.call_ref,
    trigger_ref: e.trigger_ref, queue_id: p.queueId ?? undefined, request_hash: p.hash ?? undefined,
  };
}

const COLUMN_LIST = sql.raw(COLUMNS.join(', '));
/** Rows whose ids a client chose: one stored already is left as it is, and the keys inserted are read back. */
const ON_CONFLICT_TEXT = 'on conflict (project_id, id) do nothing returning project_id, id';
/** The end of an insert: nothing for rows of server-made ids, ON_CONFLICT_TEXT for the others. */
const insertEnd = (kind: InsertKind) => (kind === 'fresh' ? '' : ` ${ON_CONFLICT_TEXT}`);
/** Rows of server-made ids ('fresh'), or of ids a client chose ('idempotent'). */
type InsertKind = 'fresh' | 'idempotent';

/** jsonb_to_recordset's select list and record type: the row's own columns, the caller and the time from parameters. */
const PG_SELECTED = (userId: string, at: unknown) =>
  sql.join(COLUMNS.map((c) => (c === 'svc_user_id' ? sql`${userId}::text` : c === 'created_at' ? sql`${at}::timestamptz` : sql`${sql.raw(`r.${c}`)}`)), ', ');
const PG_RECORD = sql.raw(Object.entries(ROW_COLUMN_TYPES).map(([c, type]) => `${c} ${type}`).join(', '));

/**
 * The insert of a chunk of rows of one kind.
 *
 * PostgreSQL reads a chunk as one JSON document of the rows' own columns (jsonb_to_recordset), with
 * the caller and the time, the same for every row, as two more parameters: a short statement
 * whatever the chunk size, and the driver sends one string instead of quoting each value of
 * fourteen arrays (that serialisation was a tenth of the server's CPU at batch 1,000). Measured
 * with the pg driver alone (chunks of 1,000 of the benchmark's records, 4 in flight, this
 * machine): 26–36k records/s and 1.8–2.5 ms of Node CPU per chunk, against 23–26k and 4.7–7.5 ms
 * for `unnest` of twelve arrays, and 23–25k and 6–7 ms for a prepared multi-row VALUES (the
 * benchmark's baseline); with `on conflict … returning`, 17–36k and 2.4–5.3 ms (hence 'fresh').
 *
 * SQLite gets a multi-row VALUES statement, prepared once per chunk size and cached.
 */
function insertStatement(db: SqlScope, chunk: readonly Prepared[], { userId, at, kind }: { userId: string; at: unknown; kind: InsertKind }): Statement {
  if (onPostgres(db)) {
    // As UTF-8 bytes (a binary text parameter): the JSON text, a large object of a few hundred KB,
    // is garbage at once instead of living through the round trip into the old generation.
    const rows = Buffer.from(JSON.stringify(chunk.map(rowFields)));
    return sql`insert into feedback (${COLUMN_LIST}) select ${PG_SELECTED(userId, at)}
      from jsonb_to_recordset(${rows}::text::jsonb) as r(${PG_RECORD})${sql.raw(insertEnd(kind))}`;
  }
  const params = chunk.flatMap((p) => {
    const row = rowFields(p);
    return COLUMNS.map((c) => (c === 'svc_user_id' ? userId : c === 'created_at' ? at : c === 'payload' ? JSON.stringify(row.payload) : (row[c] ?? null)));
  });
  return sql.rows(params, COLUMNS.length, { before: `insert into feedback (${COLUMNS.join(', ')}) values `, after: insertEnd(kind) });
}

/**
 * The queues the elements name, checked again inside the writing transaction, after their write
 * locks (see annotation-queues.ts): one deleted since validation fails the batch like a queue
 * that never existed.
 */
async function recheckQueues(tx: SqlScope, prepared: readonly Prepared[], where: Where): Promise<void> {
  const named = prepared.filter((p) => p.queueId !== null);
  if (!named.length) return;
  const queueIds = [...new Set(named.map((p) => p.queueId!))];
  await lockQueuesForWrite(tx, queueIds);
  const live = new Set<string>();
  for (let i = 0; i < queueIds.length; i += CHUNK) {
    const chunk = queueIds.slice(i, i + CHUNK);
    const rows = await sqlRows<{ id: string; project_id: string }>(tx,
      sql`select id, project_id from annotation_queues where deleted_at is null and id in (${sql.list(chunk)})`);
    for (const row of rows) live.add(`${row.project_id}\u0000${row.id}`);
  }
  const gone = named.find((p) => !live.has(`${p.projectId}\u0000${p.queueId}`));
  if (gone) throw noSuchQueue(where(prepared.indexOf(gone)), gone.projectId);
}

type StoredResult = { id: string; project_id: string; request_hash: string; created_at: unknown; svc_user_id: string; payload: unknown };

/**
 * Stores a validated batch in the caller's transaction (`sqlTransaction`: raw SQL only, without
 * the entity manager's fork and unit of work), idempotent by id (see insertThenCompare): a retry
 * answers the stored result, different content is a 409 that rolls the whole batch back.
 */
async function store(
  tx: SqlScope,
  prepared: readonly Prepared[],
  { userId, now, where, record, wake }: { userId: string; now: Date; where: Where; record: RecordEvent; wake: WebhookWake },
): Promise<Stored> {
  const positions = firstPositions(prepared, (index, first) =>
    invalid(`${where(index)}id "${prepared[index]!.id}" repeats batch[${first}] with different content.`),
  );
  const unique = prepared.filter((_, index) => positions[index] === index);
  await recheckQueues(tx, prepared, where);
  for (const projectId of inLockOrder(tx, [...new Set(unique.map((p) => p.projectId))], byText)) await ensureProject(tx, projectId);
  const at = sqlDate(tx, now);
  // A batch of server-made ids only is new as a whole: its webhook events are known before it is
  // stored, and written by its first insert's statement (one round trip fewer on PostgreSQL).
  // Otherwise they wait for what the inserts found stored.
  const allNew = unique.every((p) => p.hash === null);
  const announcing = allNew ? await feedbackCreatedWrites(tx, { created: unique, userId, wake }) : undefined;
  /** The event inserts not yet run: they go with the first insert of fresh rows. */
  let eventInserts = announcing?.statements ?? [];
  // Rows of client-chosen ids go in key order on PostgreSQL (inLockOrder); server-made ids are new, no other write holds them.
  const inKeyOrder = allNew ? unique : inLockOrder(tx, unique, byKey);
  const retries = await insertThenCompare(inKeyOrder, CHUNK, {
    async insert(chunk) {
      const inserted = new Set<string>();
      // A server-made id is new (no hash: no retry can name it), so its rows are inserted without
      // a conflict check and without reading keys back (PostgreSQL, batches of 1,000, shared
      // machine: server CPU per batch 30 → 26 ms; the database's side, see insertStatement).
      const fresh = chunk.filter((p) => p.hash === null);
      if (fresh.length) {
        await sqlRunTogether(tx, [...eventInserts, insertStatement(tx, fresh, { userId, at, kind: 'fresh' })]);
        eventInserts = [];
        for (const p of fresh) inserted.add(p.key);
      }
      const named = chunk.filter((p) => p.hash !== null);
      if (named.length) {
        const rows = await sqlRows<{ id: string; project_id: string }>(tx, insertStatement(tx, named, { userId, at, kind: 'idempotent' }));
        for (const row of rows) inserted.add(`${row.project_id}\u0000${row.id}`);
      }
      return inserted;
    },
    async readStored(chunk) {
      // One `id in (…)` per project: a chain of 1,000 `or` terms is deeper than SQLite parses.
      const byProject = new Map<string, string[]>();
      for (const p of chunk) byProject.set(p.projectId, [...(byProject.get(p.projectId) ?? []), p.id]);
      const stored = new Map<string, StoredResult & { hash: string }>();
      for (const [projectId, ids] of byProject) {
        const rows = await sqlRows<StoredResult>(tx, sql`select id, project_id, request_hash, created_at, svc_user_id, payload from feedback
          where project_id = ${projectId} and id in (${sql.list(ids)})`);
        for (const row of rows) stored.set(`${row.project_id}\u0000${row.id}`, { ...row, hash: row.request_hash });
      }
      return stored;
    },
    conflict: (p) => conflict(`${where(prepared.indexOf(p))}id "${p.id}" already exists in ${p.projectId} with different content.`),
  });
  // The records this request created (not those a retry found stored): queue rules with trigger
  // "feedback" (5.10) add the calls they name, and they are announced to webhooks (5.13), both in
  // this transaction.
  const created = unique.filter((p) => !retries.has(p.key));
  await addFeedbackRuleItems(tx, { feedback: created.map((p) => ({ projectId: p.projectId, id: p.id })), now, record });
  const announced = announcing?.written ?? (await writeFeedbackCreated(tx, { created, userId, wake }));
  const createdAt = now.toISOString();
  const results = prepared.map((p): FeedbackCreateRes => {
    const row = retries.get(p.key);
    if (!row) return { id: p.id, created_at: createdAt, svc_user_id: userId, payload: p.payload };
    return {
      id: row.id,
      created_at: isoFromSql(row.created_at),
      svc_user_id: row.svc_user_id,
      payload: jsonFromSql<Record<string, unknown>>(row.payload),
    };
  });
  return { results, newRecords: unique.length - retries.size, announced };
}

/** A stored batch, and the webhook events of `feedback.created` its transaction wrote. */
type Stored = StoredBatch<FeedbackCreateRes> & { announced: WrittenEvent[] };

/** Wakes this process's webhook deliveries after a commit that wrote feedback events. */
function committed<T extends Stored>(stored: T, events: QueueEventPublisher): T {
  if (stored.announced.length) events.webhooksWritten(stored.announced);
  return stored;
}

/**
 * Who writes which records, how large one payload may be, and where the events go: the queue
 * events of items that rules add, and the wake-up of webhook deliveries.
 */
type FeedbackWrite<T> = { userId: string; maxPayloadBytes: number; events: QueueEventPublisher } & T;

/** `POST /feedback/batch/create`: all or nothing, idempotent by id (contract 4.2). */
export async function createFeedbackBatch(
  em: Em,
  { userId, batch, maxPayloadBytes, events }: FeedbackWrite<{ batch: readonly FeedbackCreateReq[] }>,
): Promise<StoredBatch<FeedbackCreateRes>> {
  if (!batch.length) return { results: [], newRecords: 0 };
  const now = new Date();
  const prepared = await prepare(em, batch, { maxPayloadBytes, where: inBatch });
  return committed(await publishingTransaction(em, events, (tx, record) => store(tx, prepared, { userId, now, where: inBatch, record, wake: events })), events);
}

/** `POST /feedback/create`: one record, with the batch's rules. */
export async function createFeedback(
  em: Em,
  { userId, element, maxPayloadBytes, events }: FeedbackWrite<{ element: FeedbackCreateReq }>,
): Promise<FeedbackCreateRes> {
  const prepared = await prepare(em, [element], { maxPayloadBytes, where: single });
  const [result] = committed(await publishingTransaction(em, events, (tx, record) => store(tx, prepared, { userId, now: new Date(), where: single, record, wake: events })), events).results;
  return result!;
}

/**
 * `POST /feedback/replace`: removes one record and creates its replacement in one transaction.
 * `ownOnly`: the caller may replace only their own records (an annotator, contract 5.11; 403).
 */
export async function replaceFeedback(
  em: Em,
  { userId, element, feedbackId, maxPayloadBytes, events, ownOnly = false }: FeedbackWrite<{ element: FeedbackCreateReq; feedbackId: string; ownOnly?: boolean }>,
): Promise<FeedbackCreateRes> {
  const prepared = await prepare(em, [element], { maxPayloadBytes, where: single });
  const stored = await publishingTransaction(em, events, async (tx, record) => {
    if (ownOnly) await requireOwnRecords(tx, { projectId: element.project_id, ids: [feedbackId.toLowerCase()], userId });
    const removed = await sqlRun(tx, sql`delete from feedback where project_id = ${element.project_id} and id = ${feedbackId.toLowerCase()}`);
    if (!removed) throw notFound(`Feedback "${feedbackId}" does not exist in project ${element.project_id}.`);
    return store(tx, prepared, { userId, now: new Date(), where: single, record, wake: events });
  });
  return committed(stored, events).results[0]!;
}

/** 403 when any of these records is another user's (contract 5.11: an annotator changes only their own). */
async function requireOwnRecords(tx: SqlScope, { projectId, ids, userId }: { projectId: string; ids: readonly string[]; userId: string }): Promise<void> {
  for (let i = 0; i < ids.length; i += CHUNK) {
    const [other] = await sqlRows<{ id: string }>(tx,
      sql`select id from feedback where project_id = ${projectId} and id in (${sql.list(ids.slice(i, i + CHUNK))}) and svc_user_id <> ${userId} limit 1`);
    if (other) throw forbidden(`Feedback "${other.id}" is another user's; an annotator changes only their own records.`);
  }
}

/** `POST /feedback/purge`; `ownOnlyOf`: the caller may remove only their own records (an annotator, 5.11; 403). */
export async function purgeFeedback(db: SqlScope, { projectId, ids, ownOnlyOf }: { projectId: string; ids: readonly string[]; ownOnlyOf?: string }): Promise<number> {
  // Ids are stored in lower case (they are UUIDs), so they are matched in lower case.
  // Deleted in id order on PostgreSQL (inLockOrder): two purges of the same ids in other orders
  // would otherwise each wait, chunk after chunk, for rows the other deleted.
  const unique = inLockOrder(db, [...new Set(ids.map((id) => id.toLowerCase()))], byText);
  let deleted = 0;
  await sqlTransaction(db, async (tx) => {
    if (ownOnlyOf !== undefined) await requireOwnRecords(tx, { projectId, ids: unique, userId: ownOnlyOf });
    for (let i = 0; i < unique.length; i += CHUNK) {
      const chunk = unique.slice(i, i + CHUNK);
      deleted += await sqlRun(tx, sql`delete from feedback where project_id = ${projectId} and id in (${sql.list(chunk)})`);
    }
  });
  return deleted;
}

const SORT_KEYS = {
  created_at: { column: 'created_at', field: 'created_at', type: 'date' },
  feedback_type: { column: 'feedback_type', field: 'feedback_type', type: 'text' },
  // creator may be null: nulls sort as the largest value on both databases (last ascending, first
  // descending, PostgreSQL's default).
  creator: { column: 'creator', field: 'creator', type: 'text', nullable: true },
} as const satisfies Record<string, Omit<KeysetKey, 'direction'>>;

export async function queryFeedback(db: SqlScope, req: FeedbackQueryReq, page: Page): Promise<CursorPage<Feedback>> {
  const f = req.filter ?? {};
  const where: Statement[] = [
    sql`project_id = ${req.project_id}`,
    ...inList('id', f.ids?.map((id) => id.toLowerCase())),
    ...inList('svc_ref', f.svc_refs),
    ...inList('feedback_type', f.feedback_types),
  ];
  if (f.queue_id !== undefined) where.push(sql`queue_id = ${f.queue_id}`);
  if (f.call_ref !== undefined) where.push(sql`call_ref = ${f.call_ref}`);
  if (f.creator !== undefined) where.push(sql`creator = ${f.creator}`);
  if (f.svc_user_id !== undefined) where.push(sql`svc_user_id = ${f.svc_user_id}`);
  if (f.created_after) where.push(sql`created_at >= ${sqlDate(db, new Date(f.created_after))}`);
  if (f.created_before) where.push(sql`created_at < ${sqlDate(db, new Date(f.created_before))}`);
  const keys: KeysetKey[] = [
    ...(req.sort_by ?? [{ field: 'created_at', direction: 'asc' } as const]).map((s) => ({ ...SORT_KEYS[s.field], direction: s.direction })),
    { column: 'id', field: 'id', type: 'text', direction: 'asc' },
  ];
  const fingerprint = queryFingerprint({ of: 'feedback', project_id: req.project_id, filter: f, keys }, page.seal);
  if (page.cursor !== undefined) where.push(keyset(keys, decodeCursor(db, { fingerprint, keys }, page.cursor).values, 'after'));
  const read = await budgetedPage(
    {
      db,
      from: sql`feedback`,
      id: sql`id`,
      key: sql`project_id, id`,
      where: sql.join(where, ' and '),
      order: keysetOrder(keys),
      bytes: feedbackBytes(db),
      name: (id) => `Feedback record "${id}" of project ${req.project_id}`,
      limit: page.limit,
      offset: page.offset,
      budget: page.bytes,
      room: page.room,
    },
    {
      async rows(ids): Promise<StoredRecord[]> {
        const selected = sql`select ${selectList(db)} from feedback where project_id = ${req.project_id} and id in (${sql.list(ids)})`;
        if (onPostgres(db)) {
          return (await sqlRows<StoredFeedbackRow>(db, selected)).map((row) => ({ id: row.id, payload: row.payload, dto: () => feedbackOf((field) => row[field]) }));
        }
        return (await sqliteArrays(db, selected)).map((values) => ({
          id: String(values[ID_AT]),
          payload: String(values[PAYLOAD_AT]),
          dto: () => feedbackOf((_, index) => values[index]),
        }));
      },
      id: (record) => record.id,
      density: (record) => jsonDensity(record.payload),
      convert: (record) => record.dto(),
    },
  );
  return cursorPage(read, (row) => encodeCursor({ fingerprint, keys }, row));
}

/** The bytes of a record's JSON in an answer, as stored: its payload and text columns, plus field names, times and ids. */
const feedbackBytes = perDialect((db) => {
  const text = ['svc_ref', 'feedback_type', 'creator', 'annotation_ref', 'runnable_ref', 'call_ref', 'trigger_ref', 'queue_id', 'project_id', 'id', 'svc_user_id'];
  return sql`${sql.join([storedBytes(db, 'payload', 'json'), ...text.map((column) => storedBytes(db, column))], ' + ')} + ${sql.raw(String(FEEDBACK_FRAME_BYTES))}`;
});

/** Field names, punctuation and created_at of a record's JSON. */
const FEEDBACK_FRAME_BYTES = 240;

/** A record as read, its payload still JSON text: weighed before it is parsed. */
type StoredRecord = { id: string; payload: string; dto: () => Feedback };

// How a stored value becomes a field of a record: SQLite gives text and epoch milliseconds, PostgreSQL
// text and Date objects; the payload is read as JSON text on both (jsonAsText).
const text = (value: unknown): string => String(value);
const textOrNull = (value: unknown): string | null => (value === null ? null : String(value));
const jsonObject = (value: unknown): Record<string, unknown> => JSON.parse(String(value));
/**
 * created_at as ISO text. The records of a batch share their created_at and a page reads them one
 * after another, so the last value converted is kept: converting each row's took 6 % of a page.
 */
let lastCreated: unknown;
let lastIso = '';
const iso = (value: unknown): string => {
  const key = value instanceof Date ? value.getTime() : value;
  if (key !== lastCreated) {
    lastIso = isoFromSql(value);
    lastCreated = key;
  }
  return lastIso;
};

/**
 * What a feedback query reads, in the response's field order, each column with how its stored
 * value becomes the field. Both the select list and the record are made from it, so a row read by
 * position (SQLite's arrays) cannot drift from the columns asked for.
 */
const READ = {
  id: text,
  project_id: text,
  svc_ref: text,
  feedback_type: text,
  payload: jsonObject,
  creator: textOrNull,
  annotation_ref: textOrNull,
  runnable_ref: textOrNull,
  call_ref: textOrNull,
  trigger_ref: textOrNull,
  queue_id: textOrNull,
  svc_user_id: text,
  created_at: iso,
} as const satisfies { [F in keyof Feedback]-?: (value: unknown) => Feedback[F] };

type ReadField = keyof typeof READ;
const READ_FIELDS = Object.keys(READ) as ReadField[];
const READ_DECODERS = READ_FIELDS.map((field) => READ[field]);
const ID_AT = READ_FIELDS.indexOf('id');
const PAYLOAD_AT = READ_FIELDS.indexOf('payload');

/** A record as PostgreSQL's driver returns READ's columns: the payload as JSON text, created_at a Date. */
type StoredFeedbackRow = { [F in ReadField]: F extends 'payload' | 'id' ? string : unknown };

/** READ's select list, the payload as JSON text. */
const selectList = perDialect((db) =>
  sql.join(READ_FIELDS.map((field) => (field === 'payload' ? sql`${jsonAsText(db, field)} as payload` : sql`${sql.raw(field)}`)), ', '),
);

/** A record from READ's columns, `valueOf` giving each column's stored value (by name or position). */
function feedbackOf(valueOf: (field: ReadField, index: number) => unknown): Feedback {
  const record: Partial<Record<ReadField, unknown>> = {};
  for (let index = 0; index < READ_FIELDS.length; index++) record[READ_FIELDS[index]!] = READ_DECODERS[index]!(valueOf(READ_FIELDS[index]!, index));
  // Every field of Feedback is set: READ has a decoder of the field's type for each (its `satisfies`).
  return record as Feedback;
}
