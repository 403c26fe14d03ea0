import { basicAuth, call } from './bench-rest.ts';
import { createCalls, listItems, queuesWithItems, type ItemJson } from './queue-fixture.ts';
import type { Section, Settings } from './report.ts';
import type { PlannedRequest } from './sequence-load.ts';
import { expectSameItem, type SideName, type WriteBench, type WriteEnv } from './write-comparison.ts';
import { writeSection } from './write-section.ts';

// POST /annotation_queues/{q}/items/claim on assigned queues (contract 5.11; issue 28, point 6):
// Loupe's queues are `assigned` to the benchmark's 50 annotators, with overlap_coverage 0.2 and
// annotations_per_item 3 (a fifth of the items need three annotators, the rest one), so every
// claim checks that its caller is an assignee and counts only assignees' work against each item's
// own quota. The baseline is the hand-written claim of the open-queue benchmark (claim-writes.ts),
// unchanged: queues with annotations_per_item 1. Request k claims in queue k mod Q as annotator
// ⌊k / Q⌋, as there; each answer must be 200 with an item in_progress for that annotator, handed
// to no more annotators than its annotations_required.

const PER_QUEUE = 50;
const ASSIGNED = { access: 'assigned', overlap_coverage: 0.2, annotations_per_item: 3 } as const;

async function setUp(env: WriteEnv) {
  const { owner } = env;
  const callIds = await createCalls(owner, 'call', PER_QUEUE);
  await env.annotators.ensure(PER_QUEUE);
  const assignees = env.annotators.list.slice(0, PER_QUEUE).map((annotator) => annotator.id);
  const fields = (name: SideName) => (name === 'loupe' ? { ...ASSIGNED, assignees } : {});
  const handedOut: Record<SideName, Map<string, number>> = { loupe: new Map(), baseline: new Map() };
  const runs: Record<SideName, { queues: number; planned: number; sent: number }[]> = { loupe: [], baseline: [] };

  return {
    async probe() {
      for (const name of ['loupe', 'baseline'] as const) {
        const [queueId] = await queuesWithItems(owner, `claim-assigned-probe-${name}`, 1, callIds.slice(0, 1), fields(name));
        const annotator = env.annotators.list[0]!;
        const answer = await call<{ item: ItemJson }>(env[name].url, 'POST', `/annotation_queues/${queueId}/items/claim`, annotator.key, { project_id: owner.projectId });
        const [reported] = await listItems(owner, queueId!);
        expectSameItem(`claim probe, ${name}`, answer.item, reported);
      }
      // The owner is no assignee: Loupe refuses it the assigned queue.
      const [closed] = await queuesWithItems(owner, 'claim-assigned-refused', 1, callIds.slice(0, 1), fields('loupe'));
      const refused = await fetch(`${env.loupe.url}/annotation_queues/${closed}/items/claim`, {
        method: 'POST',
        headers: { authorization: basicAuth(owner.key), 'content-type': 'application/json' },
        body: JSON.stringify({ project_id: owner.projectId }),
      });
      if (refused.status !== 403) throw new Error(`a claim by a non-assignee answered ${refused.status}, not 403`);
    },

    async plan(name: SideName, requests: number) {
      const count = Math.ceil(requests / PER_QUEUE);
      const queues = await queuesWithItems(owner, `claim-assigned-${name}-${runs[name].length}`, count, callIds, fields(name));
      const run = { queues: count, planned: count * PER_QUEUE, sent: 0 };
      runs[name].push(run);
      const seen = handedOut[name];
      const body = JSON.stringify({ project_id: owner.projectId });
      return (): PlannedRequest => {
        const k = run.sent++;
        const queueId = queues[k % count]!;
        const annotator = env.annotators.list[Math.floor(k / count) % PER_QUEUE]!;
        return {
          method: 'POST',
          path: `/annotation_queues/${queueId}/items/claim`,
          headers: { authorization: basicAuth(annotator.key), 'content-type': 'application/json' },
          body,
          check: (text) => {
            if (k >= run.planned) return `request ${k} is past the ${run.planned} planned (fixture exhausted)`;
            const item = (JSON.parse(text) as { item?: (ItemJson & { annotations_required: number }) | null }).item;
            if (!item || item.queue_id !== queueId || item.annotation_state !== 'in_progress' || item.annotator_user_id !== annotator.id) {
              return `expected a new in_progress item of queue ${queueId} for ${annotator.id}, got ${text.slice(0, 300)}`;
            }
            const times = (seen.get(item.id) ?? 0) + 1;
            if (times > item.annotations_required) return `item ${item.id} was handed out ${times} times, more than its ${item.annotations_required}`;
            seen.set(item.id, times);
            return null;
          },
        };
      };
    },

    details() {
      const claims = (name: SideName) => [...handedOut[name].values()].reduce((sum, n) => sum + n, 0);
      return { items_per_queue: PER_QUEUE, assignees: PER_QUEUE, loupe_queues: { ...ASSIGNED, assignees: PER_QUEUE }, runs, claims: { loupe: claims('loupe'), baseline: claims('baseline') } };
    },
  };
}

export const assignedClaimBench: WriteBench = { name: 'claim-assigned', initialRate: 4000, targets: { sqlite: 0.5, postgresql: 0.5 }, setUp };

export function assignedClaimBenchmark(settings: Settings, workDir: string): Promise<Section> {
  return writeSection(
    assignedClaimBench,
    `POST …/items/claim on assigned queues (${PER_QUEUE} assignees, overlap_coverage 0.2, annotations_per_item 3, ${PER_QUEUE} items per queue, fresh queues per run): ` +
      `Loupe (its own process, log level ${process.env.LOUPE_LOG_LEVEL ?? 'info'} to a file) against the open-queue claim baseline of the claim benchmark ` +
      '(a bare Express 5 route doing that SQL through the same driver on the same database)',
    settings,
    workDir,
  );
}
