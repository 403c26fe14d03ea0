import { createUserViaCli } from '../harness/child-server.ts';
import { basicAuth, call, inParallel } from './bench-rest.ts';
import { addItems, createCalls, createQueue, listItems, type Owner } from './queue-fixture.ts';

// The queues the items-query benchmark reads: one per size, made of the first `size` of the same
// calls, with every COMPLETED_EVERY-th item completed (through the progress route) so that a state
// filter has something sparse to find.

export const COMPLETED_EVERY = 10;
const PROGRESS_CONCURRENCY = 16;

export type SizedQueue = { size: number; queueId: string };

export async function buildQueues(url: string, databaseUrl: string, sizes: readonly number[]): Promise<{ owner: Owner; queues: SizedQueue[] }> {
  const created = await createUserViaCli(databaseUrl, { entity: 'bench', role: 'member', username: 'bench-owner' });
  const owner: Owner = { url, key: created.api_key, projectId: 'bench/items-query' };
  const callIds = await createCalls(owner, 'call', Math.max(...sizes));
  const queues: SizedQueue[] = [];
  for (const size of sizes) {
    const queueId = await createQueue(owner, `items-${size}`);
    await addItems(owner, queueId, callIds.slice(0, size));
    const items = await listItems(owner, queueId);
    if (items.length !== size) throw new Error(`queue of ${size} lists ${items.length} items`);
    const completed = items.filter((_, index) => index % COMPLETED_EVERY === COMPLETED_EVERY - 1);
    await inParallel(completed, PROGRESS_CONCURRENCY, async (item) => {
      const response = await fetch(`${url}/annotation_queues/${queueId}/items/${item.id}/progress`, {
        method: 'POST',
        headers: { authorization: basicAuth(owner.key), 'content-type': 'application/json' },
        body: JSON.stringify({ project_id: owner.projectId, annotation_state: 'completed' }),
      });
      if (response.status !== 200) throw new Error(`progress answered ${response.status}: ${await response.text()}`);
    });
    queues.push({ size, queueId });
  }
  return { owner, queues };
}

/** Most items one items query returns (the server's default maximum `limit`). */
const MAX_PAGE = 10_000;

export type CursorPage = { cursor: string; firstId: string; lastId: string };

/**
 * The cursor that starts at item `depth` (0-based) of the queue in default order, reached by paging
 * with `next_cursor` in the largest pages that land there exactly, and the ids of the first and
 * last item of the `pageSize` items it starts (read once, so that a measured request can be checked).
 */
export async function cursorAt(owner: Owner, queueId: string, depth: number, pageSize: number): Promise<CursorPage> {
  const path = `/annotation_queues/${queueId}/items/query`;
  let cursor: string | undefined;
  for (let skipped = 0; skipped < depth; ) {
    const limit = Math.min(MAX_PAGE, depth - skipped);
    const reply = await call<{ items: { id: string }[]; next_cursor: string | null }>(owner.url, 'POST', path, owner.key, {
      project_id: owner.projectId,
      limit,
      ...(cursor === undefined ? {} : { cursor }),
    });
    if (reply.items.length !== limit || !reply.next_cursor) throw new Error(`paging to ${depth}: a page of ${limit} at ${skipped} gave ${reply.items.length} items, next_cursor ${reply.next_cursor}`);
    skipped += limit;
    cursor = reply.next_cursor;
  }
  if (cursor === undefined) throw new Error('cursorAt needs a depth above 0: the first page has no cursor');
  const page = await call<{ items: { id: string }[] }>(owner.url, 'POST', path, owner.key, { project_id: owner.projectId, limit: pageSize, cursor });
  if (page.items.length !== pageSize) throw new Error(`the page at ${depth} holds ${page.items.length} items, not ${pageSize}`);
  return { cursor, firstId: page.items[0]!.id, lastId: page.items.at(-1)!.id };
}
