import { basicAuth, call } from './bench-rest.ts';
import type { Annotator } from './bench-annotators.ts';
import { addItems, createCalls, createQueue, listItems, type ItemJson, type Owner } from './queue-fixture.ts';
import type { Section, Settings } from './report.ts';
import type { PlannedRequest } from './sequence-load.ts';
import { expectSameItem, type SideName, type WriteBench, type WriteEnv } from './write-comparison.ts';
import { writeSection } from './write-section.ts';

// POST /annotation_queues/{q}/items/{item}/progress (contract 4.1) at full concurrency, every
// request a real write: each side has its own queue of ITEMS items; annotator after annotator
// walks the queue, setting each item in_progress (an insert) and, LAG inserts later, completed (an
// update). The two kinds alternate request by request, so every run, whatever its length and
// wherever it starts, sends as many inserts as updates: runs of both sides compare the same work
// (walking inserts then updates in halves of 10,000 made a run's mix depend on where it fell). An
// item's second request follows its first long after it answered. Each answer must be 200
// and show that item in that state by that annotator.

const ITEMS = 10_000;
/**
 * How many inserts the updates trail by (about 2,000 requests). The first LAG requests are
 * inserts only: the warm-up run takes them.
 */
const LAG = 1_000;

/** The write of a side's k-th request: the n-th insert (an item of one annotator), or the update of it. */
function progressStep(k: number): { n: number; state: 'in_progress' | 'completed' } {
  if (k < LAG) return { n: k, state: 'in_progress' };
  const j = k - LAG;
  return j % 2 === 0 ? { n: LAG + j / 2, state: 'in_progress' } : { n: (j - 1) / 2, state: 'completed' };
}

type Sequence = { queueId: string; itemIds: string[]; sent: number };
/** The headers that say who sends a request of one side: Basic with the annotator's key, or a session. */
export type Credentials = (side: SideName, annotator: Annotator) => Record<string, string>;

export const byKey: Credentials = (_side, annotator) => ({ authorization: basicAuth(annotator.key) });

async function queueOf(owner: Owner, name: string, callIds: readonly string[]): Promise<{ queueId: string; items: ItemJson[] }> {
  const queueId = await createQueue(owner, name);
  await addItems(owner, queueId, callIds);
  return { queueId, items: await listItems(owner, queueId) };
}

function progressRequest(env: WriteEnv, queueId: string, itemId: string, who: Record<string, string>, state: string): Pick<PlannedRequest, 'method' | 'path' | 'headers' | 'body'> {
  return {
    method: 'POST',
    path: `/annotation_queues/${queueId}/items/${itemId}/progress`,
    headers: { ...who, 'content-type': 'application/json' },
    body: JSON.stringify({ project_id: env.owner.projectId, annotation_state: state }),
  };
}

/**
 * The progress workload; `credentials` says how each side's requests authenticate, and `prepare`
 * readies annotators the pool has just made (signing them in) before a run uses them.
 */
export async function progressWorkload(env: WriteEnv, credentials: Credentials = byKey, prepare: (annotators: readonly Annotator[]) => Promise<void> = async () => {}) {
  const { owner } = env;
  const callIds = await createCalls(owner, 'call', ITEMS);
  const sequences = {} as Record<SideName, Sequence>;
  for (const name of ['loupe', 'baseline'] as const) {
    const { queueId, items } = await queueOf(owner, `progress-${name}`, callIds);
    if (items.length !== ITEMS) throw new Error(`queue progress-${name} lists ${items.length} of ${ITEMS} items`);
    sequences[name] = { queueId, itemIds: items.map((item) => item.id), sent: 0 };
  }

  return {
    async probe() {
      for (const name of ['loupe', 'baseline'] as const) {
        const probe = await queueOf(owner, `progress-probe-${name}`, callIds.slice(0, 1));
        const request = progressRequest(env, probe.queueId, probe.items[0]!.id, {}, 'in_progress');
        const answer = await call<{ item: ItemJson }>(env[name].url, 'POST', request.path, owner.key, JSON.parse(request.body!));
        const [reported] = await listItems(owner, probe.queueId);
        expectSameItem(`progress probe, ${name}`, answer.item, reported);
      }
    },

    async plan(name: SideName, requests: number) {
      const sequence = sequences[name];
      // The k-th request's insert is at most the k-th: annotators for that many inserts.
      await env.annotators.ensure(Math.ceil((sequence.sent + requests) / ITEMS));
      await prepare(env.annotators.list);
      const capacity = env.annotators.list.length * ITEMS;
      return (): PlannedRequest => {
        const k = sequence.sent++;
        const { n, state } = progressStep(k);
        const annotator = env.annotators.list[Math.floor(n / ITEMS) % env.annotators.list.length]!;
        const itemId = sequence.itemIds[n % ITEMS]!;
        return {
          ...progressRequest(env, sequence.queueId, itemId, credentials(name, annotator), state),
          check: (text) => {
            if (n >= capacity) return `request ${k} is past the ${capacity} inserts planned (fixture exhausted)`;
            const item = (JSON.parse(text) as { item?: ItemJson | null }).item;
            if (item?.id !== itemId || item.annotation_state !== state || item.annotator_user_id !== annotator.id) {
              return `expected item ${itemId} ${state} by ${annotator.id}, got ${text.slice(0, 300)}`;
            }
            return null;
          },
        };
      };
    },

    details() {
      return {
        items_per_queue: ITEMS,
        annotators: env.annotators.list.length,
        requests_sent: { loupe: sequences.loupe.sent, baseline: sequences.baseline.sent },
      };
    },
  };
}

export const progressBench: WriteBench = { name: 'progress', initialRate: 6000, setUp: (env) => progressWorkload(env) };

export function progressBenchmark(settings: Settings, workDir: string): Promise<Section> {
  return writeSection(
    progressBench,
    'POST …/items/{item}/progress, every request a real write (in_progress inserts and completed updates alternating, ' +
      `${ITEMS} items per side, a different annotator per pass): Loupe (its own process, log level ${process.env.LOUPE_LOG_LEVEL ?? 'info'} to a file) ` +
      'against a bare Express 5 route doing the same SQL (auth join, transaction, item lock on PostgreSQL) through the same driver on the same database',
    settings,
    workDir,
  );
}
