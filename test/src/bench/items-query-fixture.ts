import { createUserViaCli } from '../harness/child-server.ts';
import { basicAuth, inParallel } from './bench-rest.ts';
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
