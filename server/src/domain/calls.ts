import { raw, type InferEntity } from '@mikro-orm/core';
import type { Em } from '../db/orm.ts';
import type { Call as CallDto, CallCreateReq, CallQueryReq } from '@loupe/shared';
import type { AuthUser } from './auth-user.ts';
import { Call } from '../db/entities.ts';
import { ensureProject, requireProjectAccess } from './access.ts';
import { conflict, invalid, notFound } from './errors.ts';
import { contentHash, firstPositions, insertThenCompare } from './idempotency.ts';
import { decodeCursor, encodeCursor, keyset, queryFingerprint, type KeysetKey } from './cursor.ts';
import { pageOf, type CursorPage, type Page } from './paging.ts';
import { newId } from './ids.ts';

type CallRow = InferEntity<typeof Call>;

const IN_CHUNK = 500;

export function toCallDto(row: CallRow): CallDto {
  return {
    project_id: row.projectId,
    id: row.id,
    trace_id: row.traceId,
    op_name: row.opName,
    started_at: row.startedAt.toISOString(),
    ended_at: row.endedAt ? row.endedAt.toISOString() : null,
    inputs: (row.inputs ?? null) as CallDto['inputs'],
    output: (row.output ?? null) as CallDto['output'],
    attributes: (row.attributes ?? null) as CallDto['attributes'],
    exception: row.exception ?? null,
    created_at: row.createdAt.toISOString(),
    created_by: row.createdBy,
  };
}

/**
 * Stores a batch of calls, all or nothing. An id that exists with the same content is a retry and
 * stores nothing new; with other content it is a 409 for the whole batch.
 */
export async function createCalls(em: Em, user: AuthUser, batch: readonly CallCreateReq[]): Promise<{ id: string }[]> {
  for (const projectId of new Set(batch.map((call) => call.project_id))) requireProjectAccess(user, projectId, 'write');
  batch.forEach((call, index) => {
    if (call.ended_at && Date.parse(call.ended_at) < Date.parse(call.started_at)) {
      throw invalid(`batch[${index}].ended_at (${call.ended_at}) is before its started_at (${call.started_at}).`);
    }
  });
  const keyed = batch.map((call) => {
    const id = call.id ?? newId();
    return { key: `${call.project_id}\u0000${id}`, hash: contentHash(call), id, call };
  });
  const positions = firstPositions(keyed, (index, first) =>
    invalid(`batch[${index}]: call id "${keyed[index]!.id}" repeats batch[${first}] with different content.`),
  );
  const now = new Date();
  const unique = keyed
    .filter((_, index) => positions[index] === index)
    .map((element) => ({ ...element, row: callRow(element.id, element.hash, element.call, user, now) }));

  await em.transactional(async (tx) => {
    for (const projectId of new Set(unique.map(({ call }) => call.project_id))) await ensureProject(tx, projectId);
    await insertThenCompare(unique, IN_CHUNK, {
      async insert(chunk) {
        const inserted = await tx
          .createQueryBuilder(Call)
          .insert(chunk.map(({ row }) => row))
          .onConflict(['projectId', 'id'])
          .ignore()
          .returning(['projectId', 'id'])
          .execute<{ projectId: string; id: string }[]>('all');
        return new Set(inserted.map((row) => `${row.projectId}\u0000${row.id}`));
      },
      async readStored(chunk) {
        const stored = new Map<string, { hash: string }>();
        for (const [projectId, ids] of groupIds(chunk.map(({ row }) => row))) {
          const rows = await tx.find(Call, { projectId, id: { $in: ids } }, { fields: ['id', 'requestHash'] });
          for (const row of rows) stored.set(`${projectId}\u0000${row.id}`, { hash: row.requestHash });
        }
        return stored;
      },
      conflict: (element) =>
        conflict(`batch[${keyed.findIndex((k) => k.key === element.key)}]: call id "${element.id}" already exists in ${element.call.project_id} with different content.`),
    });
  });
  return keyed.map(({ id }) => ({ id }));
}

function callRow(id: string, hash: string, call: CallCreateReq, user: AuthUser, now: Date): CallRow {
  return {
    projectId: call.project_id,
    id,
    traceId: call.trace_id ?? newId(),
    opName: call.op_name,
    startedAt: new Date(call.started_at),
    endedAt: call.ended_at ? new Date(call.ended_at) : null,
    inputs: call.inputs ?? null,
    output: call.output ?? null,
    attributes: call.attributes ?? null,
    exception: call.exception ?? null,
    requestHash: hash,
    createdAt: now,
    createdBy: user.id,
  };
}

function groupIds(rows: readonly { projectId: string; id: string }[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const row of rows) {
    const ids = groups.get(row.projectId) ?? [];
    ids.push(row.id);
    groups.set(row.projectId, ids);
  }
  return groups;
}

export async function readCall(em: Em, user: AuthUser, projectId: string, callId: string): Promise<CallDto> {
  requireProjectAccess(user, projectId, 'read');
  const row = await em.findOne(Call, { projectId, id: callId });
  if (!row) throw notFound(`Call "${callId}" does not exist in project ${projectId}.`);
  return toCallDto(row);
}

/** Calls in the order of their start, then id: the order of the (project_id, started_at, id) index. */
const CALL_KEYS: KeysetKey[] = [
  { column: 'started_at', field: 'startedAt', type: 'date', direction: 'asc' },
  { column: 'id', field: 'id', type: 'text', direction: 'asc' },
];

export async function queryCalls(em: Em, user: AuthUser, query: CallQueryReq, page: Page): Promise<CursorPage<CallDto>> {
  requireProjectAccess(user, query.project_id, 'read');
  const filter = query.filter ?? {};
  const fingerprint = queryFingerprint({ of: 'calls', project_id: query.project_id, filter }, page.seal);
  let after = {};
  if (page.cursor !== undefined) {
    const bound = keyset(CALL_KEYS, decodeCursor(em, page.cursor, fingerprint, CALL_KEYS).values, 'after');
    after = { [raw(bound.sql, bound.params)]: [] };
  }
  const rows = await em.find(
    Call,
    {
      projectId: query.project_id,
      ...(filter.call_ids ? { id: { $in: filter.call_ids } } : {}),
      ...(filter.op_names ? { opName: { $in: filter.op_names } } : {}),
      ...(filter.trace_ids ? { traceId: { $in: filter.trace_ids } } : {}),
      ...after,
    },
    { orderBy: { startedAt: 'asc', id: 'asc' }, limit: page.limit + 1, offset: page.offset },
  );
  const { rows: calls, nextCursor } = pageOf(rows, page.limit, (row) => encodeCursor(fingerprint, CALL_KEYS, row));
  return { rows: calls.map(toCallDto), nextCursor };
}
