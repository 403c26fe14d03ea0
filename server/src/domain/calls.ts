import type { Call as CallDto, CallCreateReq, CallQueryReq } from '@loupe/shared';
import {
  byKey,
  byText,
  inLockOrder,
  isoFromSql,
  isoOrNullFromSql,
  jsonAsText,
  jsonParam,
  perDialect,
  sqlDate,
  sqlRows,
  storedBytes,
  type SqlScope,
} from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { ensureProject } from './access.ts';
import { callFilterConditions, callFilterTable } from './call-filter.ts';
import { answersBusy, budgetedPage, jsonDensity, rowTooLarge } from './answer-budget.ts';
import { conflict, forbidden, invalid, notFound } from './errors.ts';
import { contentHash, firstPositions, insertThenCompare, type StoredBatch } from './idempotency.ts';
import { decodeCursor, encodeCursor, keyset, keysetOrder, queryFingerprint, type KeysetKey } from './cursor.ts';
import { cursorPage, type CursorPage, type Page, type PageLimits } from './paging.ts';
import { newId } from './ids.ts';
import { publishingTransaction, type QueueEventPublisher } from './queue-events.ts';
import { addCallRuleItems, callRulesOf } from './rule-items.ts';

const IN_CHUNK = 500;

/** A call as its columns come from the database (see callColumns). */
type CallSqlRow = {
  project_id: string;
  id: string;
  trace_id: string;
  parent_id: string | null;
  op_name: string;
  started_at: unknown;
  ended_at: unknown;
  inputs: string | null;
  output: string | null;
  attributes: string | null;
  exception: string | null;
  created_at: unknown;
  created_by: string;
};

/** What a call read selects, its JSON columns as text (see jsonAsText). */
const callColumns = perDialect((db) => {
  return sql`project_id, id, trace_id, parent_id, op_name, started_at, ended_at, ${jsonAsText(db, 'inputs')} as inputs, ${jsonAsText(db, 'output')} as output,
    ${jsonAsText(db, 'attributes')} as attributes, exception, created_at, created_by`;
});

/**
 * The bytes of a call's JSON in an answer, as stored: its JSON and text columns, plus the field
 * names, times and ids around them.
 */
const callBytes = perDialect((db) => {
  const columns = [
    storedBytes(db, 'inputs', 'json'),
    storedBytes(db, 'output', 'json'),
    storedBytes(db, 'attributes', 'json'),
    storedBytes(db, 'exception'),
    storedBytes(db, 'op_name'),
    storedBytes(db, 'project_id'),
    storedBytes(db, 'id'),
    storedBytes(db, 'trace_id'),
    storedBytes(db, 'parent_id'),
  ];
  return sql`${sql.join(columns, ' + ')} + ${sql.raw(String(CALL_FRAME_BYTES))}`;
});

/** Field names, punctuation, four timestamps and created_by of a call's JSON. */
const CALL_FRAME_BYTES = 320;

export function toCallDto(row: CallSqlRow): CallDto {
  return {
    project_id: row.project_id,
    id: row.id,
    trace_id: row.trace_id,
    parent_id: row.parent_id ?? null,
    op_name: row.op_name,
    started_at: isoFromSql(row.started_at),
    ended_at: isoOrNullFromSql(row.ended_at),
    inputs: parseJson(row.inputs) as CallDto['inputs'],
    output: parseJson(row.output) as CallDto['output'],
    attributes: parseJson(row.attributes) as CallDto['attributes'],
    exception: row.exception ?? null,
    created_at: isoFromSql(row.created_at),
    created_by: row.created_by,
  };
}

/** What a call's JSON columns cost beyond their length (see jsonDensity). */
function callDensity(row: CallSqlRow): number {
  return jsonDensity(row.inputs) + jsonDensity(row.output) + jsonDensity(row.attributes);
}

function parseJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

const callName = (projectId: string, id: string) => `Call "${id}" of project ${projectId}`;


type Keyed = { key: string; hash: string; id: string; call: CallCreateReq; index: number };

/**
 * Stores a batch of calls, all or nothing. An id that exists with the same content is a retry and
 * stores nothing new; with other content it is a 409 for the whole batch.
 */
export async function createCalls(
  db: SqlScope,
  { userId, batch, events }: Pick<CallWrite, 'userId' | 'batch' | 'events'>,
): Promise<StoredBatch<{ id: string }>> {
  return writeCalls(db, { userId, batch, events, conflicts: 'fail' });
}

export type CallWrite = {
  userId: string;
  batch: readonly CallCreateReq[];
  /** Where the items that queue rules add (5.10) are announced once the transaction commits. */
  events: QueueEventPublisher;
  /**
   * 'fail': a call whose id repeats an earlier one of the batch, or a stored one, with other content
   * fails the whole batch (400, 409). 'report': that call is left out and named in `refused`, and
   * the rest of the batch is stored, all or nothing (OpenTelemetry's partial success, contract 5.9).
   */
  conflicts: 'fail' | 'report';
};

/** A call of the batch left out, by its position in the batch. */
export type RefusedCall = { index: number; reason: string };

/**
 * Stores calls (see CallWrite): the one write of calls/batch/create and of OpenTelemetry ingest, so
 * that the same content gives the same stored call, and a retry by either stores nothing new.
 *
 * Written in SQL with bound parameters: each JSON column is serialised once, per chunk as it is
 * written, and bound as text (PostgreSQL casts it to jsonb). The ORM's insert wrote every value into
 * the statement's text, escaped, which took dozens of times a large call's size in heap.
 */
export async function writeCalls(
  db: SqlScope,
  { userId, batch, conflicts, events }: CallWrite,
): Promise<StoredBatch<{ id: string }> & { refused: RefusedCall[] }> {
  batch.forEach((call, index) => {
    if (call.ended_at && Date.parse(call.ended_at) < Date.parse(call.started_at)) {
      throw invalid(`batch[${index}].ended_at (${call.ended_at}) is before its started_at (${call.started_at}).`);
    }
  });
  const keyed: Keyed[] = batch.map((call, index) => {
    const id = call.id ?? newId();
    return { key: `${call.project_id}\u0000${id}`, hash: contentHash(call), id, call, index };
  });
  const refused: RefusedCall[] = [];
  const unique: Keyed[] = [];
  if (conflicts === 'fail') {
    const positions = firstPositions(keyed, (index, first) =>
      invalid(`batch[${index}]: call id "${keyed[index]!.id}" repeats batch[${first}] with different content.`),
    );
    unique.push(...keyed.filter((_, index) => positions[index] === index));
  } else {
    const first = new Map<string, Keyed>();
    for (const element of keyed) {
      const earlier = first.get(element.key);
      if (earlier === undefined) {
        first.set(element.key, element);
        unique.push(element);
      } else if (earlier.hash !== element.hash) {
        refused.push({ index: element.index, reason: `its id "${element.id}" repeats an earlier one of the same request with different content` });
      }
    }
  }
  const now = new Date();
  let conflicting = 0;

  const retried = await publishingTransaction(db, events, async (tx, record) => {
    const projectIds = inLockOrder(tx, [...new Set(unique.map(({ call }) => call.project_id))], byText);
    for (const projectId of projectIds) await ensureProject(tx, projectId);
    // Queue rules (5.10) add the new calls they match in this transaction: when the batch answers
    // 200, the items exist. On PostgreSQL the insert returns each new call's rule flags.
    const rules = await callRulesOf(tx, projectIds);
    const returning = rules.returning ? sql`, ${rules.returning} as flags` : sql``;
    // The calls this transaction stored, with their rule flags when the insert returned them.
    const inserted = new Map<string, string | undefined>();
    const createdAt = sqlDate(tx, now);
    // On PostgreSQL inserted in key order whatever the batch's (inLockOrder): two batches naming
    // the same new ids in other orders would otherwise each wait for the other's uncommitted (project_id, id).
    const inKeyOrder = inLockOrder(tx, unique, byKey);
    const retried = await insertThenCompare(inKeyOrder, IN_CHUNK, {
      async insert(chunk) {
        const rows = chunk.map(({ id, hash, call }) => {
          const startedAt = sqlDate(tx, new Date(call.started_at));
          const endedAt = call.ended_at ? sqlDate(tx, new Date(call.ended_at)) : null;
          const [inputs, output, attributes] = [call.inputs, call.output, call.attributes].map((value) => jsonParam(tx, jsonOrNull(value)));
          return sql`(${call.project_id}, ${id}, ${call.trace_id ?? newId()}, ${call.parent_id ?? null}, ${call.op_name}, ${startedAt}, ${endedAt}, ${inputs}, ${output}, ${attributes},
            ${call.exception ?? null}, ${hash}, ${createdAt}, ${userId})`;
        });
        const rowsInserted = await sqlRows<{ project_id: string; id: string; flags?: string }>(tx,
          sql`insert into calls (project_id, id, trace_id, parent_id, op_name, started_at, ended_at, inputs, output, attributes, exception, request_hash, created_at, created_by)
           values ${sql.join(rows, ', ')}
           on conflict (project_id, id) do nothing returning project_id, id${returning}`,
        );
        const keys = new Set<string>();
        for (const stored of rowsInserted) {
          const key = `${stored.project_id}\u0000${stored.id}`;
          keys.add(key);
          inserted.set(key, stored.flags);
        }
        return keys;
      },
      async readStored(chunk) {
        const stored = new Map<string, { hash: string }>();
        for (const [projectId, ids] of groupIds(chunk)) {
          const rows = await sqlRows<{ id: string; request_hash: string }>(tx,
            sql`select id, request_hash from calls where project_id = ${projectId} and id in (${sql.list(ids)})`,
          );
          for (const found of rows) stored.set(`${projectId}\u0000${found.id}`, { hash: found.request_hash });
        }
        return stored;
      },
      conflict: (element) => {
        if (conflicts === 'fail') {
          return conflict(`batch[${element.index}]: call id "${element.id}" already exists in ${element.call.project_id} with different content.`);
        }
        conflicting++;
        refused.push({ index: element.index, reason: `a call with its id "${element.id}" is stored in ${element.call.project_id} with different content` });
        return undefined;
      },
    });
    // Only these: a retried call was stored before, and so was a refused one (another content under its id).
    const stored = unique.filter(({ key }) => inserted.has(key)).map(({ key, id, call }) => ({ projectId: call.project_id, id, flags: inserted.get(key) }));
    await addCallRuleItems(tx, { calls: stored, rules, now, record });
    return retried;
  });
  refused.sort((a, b) => a.index - b.index);
  const refusedIndexes = new Set(refused.map(({ index }) => index));
  return {
    results: keyed.filter(({ index }) => !refusedIndexes.has(index)).map(({ id }) => ({ id })),
    newRecords: unique.length - retried.size - conflicting,
    refused,
  };
}

/** A JSON column's parameter: the value's JSON text, or SQL null for an absent or null value. */
function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

function groupIds(elements: readonly Keyed[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const { call, id } of elements) {
    const ids = groups.get(call.project_id) ?? [];
    ids.push(id);
    groups.set(call.project_id, ids);
  }
  return groups;
}

/**
 * Calls `calls` that are items of these queues (an annotator's calls, contract 5.11): a seek per
 * queue on the items' unique index (queue_id, call_id).
 */
function itemOfQueues(queueIds: readonly string[]): Statement {
  if (!queueIds.length) return sql`1 = 0`;
  return sql`exists (select 1 from annotation_queue_items i where i.queue_id in (${sql.list(queueIds)}) and i.call_id = calls.id and i.deleted_at is null)`;
}

/**
 * One call; 413 when it alone is larger than an answer may be (`budget` bytes), before it is read.
 * `onlyOfQueues`: the caller may read only the calls of these queues' items (an annotator, 5.11;
 * 403 for any other id, whether or not it exists).
 */
export async function readCall(
  db: SqlScope,
  { projectId, callId, limits, onlyOfQueues }: { projectId: string; callId: string; limits: Pick<PageLimits, 'responseBytes' | 'room'>; onlyOfQueues?: readonly string[] },
): Promise<CallDto> {
  if (onlyOfQueues) {
    const [visible] = await sqlRows<{ id: string }>(db, sql`select id from calls where project_id = ${projectId} and id = ${callId} and ${itemOfQueues(onlyOfQueues)}`);
    if (!visible) throw forbidden(`Call "${callId}" is not an item of an annotation queue open to you; an annotator reads only those.`);
  }
  const budget = limits.responseBytes;
  const where = sql`from calls where project_id = ${projectId} and id = ${callId}`;
  const [size] = await sqlRows<{ bytes: number | string }>(db, sql`select ${callBytes(db)} as bytes ${where}`);
  if (!size) throw notFound(`Call "${callId}" does not exist in project ${projectId}.`);
  if (Number(size.bytes) > budget) throw rowTooLarge(callName(projectId, callId), Number(size.bytes), budget);
  if (!(await limits.room(Number(size.bytes)))) throw answersBusy();
  const [row] = await sqlRows<CallSqlRow>(db, sql`select ${callColumns(db)} ${where}`);
  if (!row) throw notFound(`Call "${callId}" does not exist in project ${projectId}.`);
  const weight = Number(size.bytes) + callDensity(row);
  if (weight > budget) throw rowTooLarge(callName(projectId, callId), weight, budget);
  return toCallDto(row);
}

/** Calls in the order of their start, then id: the order of the (project_id, started_at, id) index. */
const CALL_KEYS: KeysetKey[] = [
  { column: 'started_at', field: 'started_at', type: 'date', direction: 'asc' },
  { column: 'id', field: 'id', type: 'text', direction: 'asc' },
];

export async function queryCalls(db: SqlScope, query: CallQueryReq, page: Page): Promise<CursorPage<CallDto>> {
  return callsPage(db, { query, page });
}

/** The calls query narrowed to the calls of these queues' items (an annotator's, contract 5.11). */
export async function queryCallsOfQueues(db: SqlScope, { query, page, queueIds }: { query: CallQueryReq; page: Page; queueIds: readonly string[] }): Promise<CursorPage<CallDto>> {
  return callsPage(db, { query, page, onlyOfQueues: queueIds });
}

async function callsPage(db: SqlScope, { query, page, onlyOfQueues }: { query: CallQueryReq; page: Page; onlyOfQueues?: readonly string[] }): Promise<CursorPage<CallDto>> {
  const filter = query.filter ?? {};
  const fingerprint = queryFingerprint({ of: 'calls', project_id: query.project_id, filter }, page.seal);
  const where = [sql`project_id = ${query.project_id}`, ...callFilterConditions(db, filter)];
  if (onlyOfQueues) where.push(itemOfQueues(onlyOfQueues));
  if (page.cursor !== undefined) where.push(keyset(CALL_KEYS, decodeCursor(db, { fingerprint, keys: CALL_KEYS }, page.cursor).values, 'after'));
  const read = await budgetedPage(
    {
      db,
      from: sql`calls`,
      id: sql`id`,
      key: sql`project_id, id`,
      where: sql.join(where, ' and '),
      order: keysetOrder(CALL_KEYS),
      bytes: callBytes(db),
      name: (id) => callName(query.project_id, id),
      limit: page.limit,
      offset: page.offset,
      keysFrom: await callFilterTable(db, filter),
      budget: page.bytes,
      room: page.room,
    },
    {
      rows: (ids) => sqlRows<CallSqlRow>(db, sql`select ${callColumns(db)} from calls where project_id = ${query.project_id} and id in (${sql.list(ids)})`),
      id: (row) => row.id,
      density: callDensity,
      convert: toCallDto,
    },
  );
  return cursorPage(read, (call) => encodeCursor({ fingerprint, keys: CALL_KEYS }, call));
}
