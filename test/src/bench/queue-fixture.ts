import { call, inParallel } from './bench-rest.ts';

// Calls, queues and items built through Loupe's own REST routes, in the largest pieces the
// server accepts (10,000 calls per batch, 10,000 call ids per add-items request).

const PIECE = 10_000;
const SET_UP_CONCURRENCY = 4;

export type Owner = { url: string; key: string; projectId: string };

function pieces<T>(values: readonly T[], size = PIECE): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

/** `count` calls with ids `<prefix>-<n>`, started one millisecond apart; returns their ids in order. */
export async function createCalls(owner: Owner, prefix: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, n) => `${prefix}-${n}`);
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  await inParallel(pieces(ids), SET_UP_CONCURRENCY, async (chunk, p) => {
    const batch = chunk.map((id, n) => {
      const startedAt = start + p * PIECE + n;
      return {
        project_id: owner.projectId,
        id,
        op_name: `op-${n % 7}`,
        started_at: new Date(startedAt).toISOString(),
        ended_at: new Date(startedAt + 1500).toISOString(),
        inputs: { question: `question ${id}` },
        output: { answer: `answer ${id}` },
      };
    });
    const reply = await call<{ res: unknown[] }>(owner.url, 'POST', '/calls/batch/create', owner.key, { batch });
    if (reply.res.length !== chunk.length) throw new Error(`calls/batch/create stored ${reply.res.length} of ${chunk.length}`);
  });
  return ids;
}

export async function createQueue(owner: Owner, name: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = await call<{ id: string }>(owner.url, 'POST', '/annotation_queues', owner.key, { project_id: owner.projectId, name, ...fields });
  return reply.id;
}

/** Adds the calls to the queue in order; every one must be added. */
export async function addItems(owner: Owner, queueId: string, callIds: readonly string[]): Promise<void> {
  for (const chunk of pieces(callIds)) {
    const reply = await call<{ added_count: number }>(owner.url, 'POST', `/annotation_queues/${queueId}/items`, owner.key, {
      project_id: owner.projectId,
      call_ids: chunk,
    });
    if (reply.added_count !== chunk.length) throw new Error(`add-items added ${reply.added_count} of ${chunk.length}`);
  }
}

export type ItemJson = Record<string, unknown> & { id: string; call_id: string };

/** The queue's items in default order (created_at, id), in pages of 10,000. */
export async function listItems(owner: Owner, queueId: string, body: Record<string, unknown> = {}): Promise<ItemJson[]> {
  const items: ItemJson[] = [];
  for (;;) {
    const reply = await call<{ items: ItemJson[] }>(owner.url, 'POST', `/annotation_queues/${queueId}/items/query`, owner.key, {
      project_id: owner.projectId,
      ...body,
      limit: PIECE,
      offset: items.length,
    });
    items.push(...reply.items);
    if (reply.items.length < PIECE) return items;
  }
}

/** Several queues, each holding the same calls as items; returns their ids. */
export async function queuesWithItems(owner: Owner, namePrefix: string, count: number, callIds: readonly string[], fields: Record<string, unknown> = {}): Promise<string[]> {
  return inParallel(Array.from({ length: count }, (_, n) => n), SET_UP_CONCURRENCY, async (n) => {
    const queueId = await createQueue(owner, `${namePrefix}-${n}`, fields);
    await addItems(owner, queueId, callIds);
    return queueId;
  });
}
