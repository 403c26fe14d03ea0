import { basicAuth, call } from './bench-rest.ts';
import { createCalls, listItems, queuesWithItems, type ItemJson } from './queue-fixture.ts';
import type { Section, Settings } from './report.ts';
import type { PlannedRequest } from './sequence-load.ts';
import { expectSameItem, type SideName, type WriteBench, type WriteEnv } from './write-comparison.ts';
import { writeSection } from './write-section.ts';

// POST /annotation_queues/{q}/items/claim (contract 5.2) at full concurrency, every request a new
// claim: queues with annotations_per_item 1 and PER_QUEUE items each, fresh ones for every run of
// either side, sized from that side's last rate. Request k claims in queue k mod Q as annotator
// ⌊k / Q⌋, so no annotator claims twice in a queue (the answer would be its own item again) and
// concurrent claims fall on different queues. A claim walks past the items already taken in
// its queue; sizing each run's queues from its side's rate keeps that depth alike for both sides
// (at most PER_QUEUE). Each answer must be 200 with a new item, in_progress, for that annotator.

const PER_QUEUE = 50;

async function setUp(env: WriteEnv) {
  const { owner } = env;
  const callIds = await createCalls(owner, 'call', PER_QUEUE);
  await env.annotators.ensure(PER_QUEUE);
  const claimed: Record<SideName, Set<string>> = { loupe: new Set(), baseline: new Set() };
  const runs: Record<SideName, { queues: number; planned: number; sent: number }[]> = { loupe: [], baseline: [] };

  return {
    async probe() {
      for (const name of ['loupe', 'baseline'] as const) {
        const [queueId] = await queuesWithItems(owner, `claim-probe-${name}`, 1, callIds.slice(0, 1));
        const answer = await call<{ item: ItemJson }>(env[name].url, 'POST', `/annotation_queues/${queueId}/items/claim`, owner.key, { project_id: owner.projectId });
        const [reported] = await listItems(owner, queueId!);
        expectSameItem(`claim probe, ${name}`, answer.item, reported);
      }
    },

    async plan(name: SideName, requests: number) {
      const count = Math.ceil(requests / PER_QUEUE);
      const queues = await queuesWithItems(owner, `claim-${name}-${runs[name].length}`, count, callIds);
      const run = { queues: count, planned: count * PER_QUEUE, sent: 0 };
      runs[name].push(run);
      const seen = claimed[name];
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
            const item = (JSON.parse(text) as { item?: ItemJson | null }).item;
            if (!item || item.queue_id !== queueId || item.annotation_state !== 'in_progress' || item.annotator_user_id !== annotator.id) {
              return `expected a new in_progress item of queue ${queueId} for ${annotator.id}, got ${text.slice(0, 300)}`;
            }
            if (seen.has(item.id)) return `item ${item.id} was handed out before`;
            seen.add(item.id);
            return null;
          },
        };
      };
    },

    details() {
      return { items_per_queue: PER_QUEUE, annotators: PER_QUEUE, runs, claims: { loupe: claimed.loupe.size, baseline: claimed.baseline.size } };
    },
  };
}

export const claimBench: WriteBench = { name: 'claim', initialRate: 4000, setUp };

export function claimBenchmark(settings: Settings, workDir: string): Promise<Section> {
  return writeSection(
    claimBench,
    `POST …/items/claim, every request a new claim (annotations_per_item 1, ${PER_QUEUE} items per queue, fresh queues per run): ` +
      `Loupe (its own process, log level ${process.env.LOUPE_LOG_LEVEL ?? 'info'} to a file) against a bare Express 5 route doing the same SQL ` +
      '(auth join, queue lookup, transaction; advisory lock and SKIP LOCKED on PostgreSQL) through the same driver on the same database',
    settings,
    workDir,
  );
}
