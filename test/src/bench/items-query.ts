import { join } from 'node:path';
import { freshDatabase, type Backend } from '../harness/databases.ts';
import { basicAuth } from './bench-rest.ts';
import { startLoupe } from './child.ts';
import { COMPLETED_EVERY, buildQueues, cursorAt, type CursorPage, type SizedQueue } from './items-query-fixture.ts';
import type { Owner } from './queue-fixture.ts';
import { benchBackends, median, type Section, type Settings } from './report.ts';
import { measureSequence, type PlannedRequest, type SequenceMeasurement } from './sequence-load.ts';

// How POST /annotation_queues/{q}/items/query with include_position grows with the queue: p50
// and p95 latency of one page of 100 on queues of 1k, 10k and 100k items, on each database. The
// main figure is the first page in default order; a page filtered by annotation_states and the
// last page (offset size-100) show the rest. Latency is measured one request at a time (a
// single connection), so that it is the query's cost and not time spent queueing behind others.
// Cursor paging: the page that starts at item 99,900 (the last page of smaller queues), with the
// cursor that starts there (found once by paging, untimed), against the first page.

const SIZES = [1_000, 10_000, 100_000];
const PAGE = 100;
const CONNECTIONS = 1;
/** Target: p95 on the largest queue at most this many times p95 on the smallest (first page). */
const MAX_GROWTH = 5;
/** 0-based index of the first item of the deep page reached by cursor. */
const DEEP = 99_900;
/** Target: the deep page's p95 on the largest queue at most this many times the first page's p95 on the smallest. */
const MAX_DEEP_RATIO = 1.5;
const deepStart = (size: number) => Math.min(DEEP, size - PAGE);

type Case = {
  name: string;
  body: (size: number) => Record<string, unknown>;
  positions: (size: number) => [number, number];
  /** Whether the request carries the cursor that starts at deepStart(size); it is checked by item ids. */
  cursor?: true;
};

const CASES: Case[] = [
  { name: 'first page', body: () => ({}), positions: () => [1, PAGE] },
  {
    name: 'filtered: completed (1 in 10)',
    body: () => ({ filter: { annotation_states: ['completed'] } }),
    positions: () => [COMPLETED_EVERY, COMPLETED_EVERY * PAGE],
  },
  { name: 'last page', body: (size) => ({ offset: size - PAGE }), positions: (size) => [size - PAGE + 1, size] },
  { name: `page at ${DEEP} by cursor`, body: () => ({}), positions: (size) => [deepStart(size) + 1, deepStart(size) + PAGE], cursor: true },
  {
    name: `page at ${DEEP} by cursor, no positions`,
    body: () => ({ include_position: false }),
    positions: (size) => [deepStart(size) + 1, deepStart(size) + PAGE],
    cursor: true,
  },
];
/** The deep page with the same request as the first page's but for its cursor: the target's case. */
const DEEP_CASE = CASES[3]!.name;

type Row = { database: Backend; case: string; items: number; p50_ms: number; p95_ms: number; p99_ms: number; rps: number; rounds: SequenceMeasurement[] };

function pageRequest(owner: Owner, queue: SizedQueue, c: Case, cursor: CursorPage | undefined): () => PlannedRequest {
  const [first, last] = c.positions(queue.size);
  const request: PlannedRequest = {
    method: 'POST',
    path: `/annotation_queues/${queue.queueId}/items/query`,
    headers: { authorization: basicAuth(owner.key), 'content-type': 'application/json' },
    body: JSON.stringify({ project_id: owner.projectId, include_position: true, limit: PAGE, ...c.body(queue.size), ...(cursor ? { cursor: cursor.cursor } : {}) }),
    check: (text) => {
      if (cursor) {
        const items = (JSON.parse(text) as { items: { id: string }[] }).items;
        const ok = items.length === PAGE && items[0]?.id === cursor.firstId && items.at(-1)?.id === cursor.lastId;
        return ok ? null : `expected the ${PAGE} items from ${first} to ${last} (${cursor.firstId} … ${cursor.lastId}), got ${items.length} (${items[0]?.id} … ${items.at(-1)?.id})`;
      }
      const items = (JSON.parse(text) as { items: { position_in_queue: number | null }[] }).items;
      const got = [items[0]?.position_in_queue, items.at(-1)?.position_in_queue];
      if (items.length !== PAGE || got[0] !== first || got[1] !== last) return `expected ${PAGE} items at positions ${first}…${last}, got ${items.length} at ${got.join('…')}`;
      return null;
    },
  };
  return () => request;
}

async function measureDatabase(backend: Backend, settings: Settings, workDir: string, problems: string[]): Promise<Row[]> {
  const database = await freshDatabase(backend);
  const loupe = await startLoupe(database.url, join(workDir, `loupe-items-query-${backend}.log`)).catch(async (error) => {
    await database.drop();
    throw error;
  });
  try {
    const { owner, queues } = await buildQueues(loupe.url, database.url, SIZES);
    const cursors = new Map<number, CursorPage>();
    for (const queue of queues) cursors.set(queue.size, await cursorAt(owner, queue.queueId, deepStart(queue.size), PAGE));
    const rows: Row[] = [];
    for (const c of CASES) {
      const run = async (queue: SizedQueue, seconds: number) => {
        const m = await measureSequence({ url: loupe.url, seconds, connections: CONNECTIONS, expectStatus: 200, next: pageRequest(owner, queue, c, c.cursor ? cursors.get(queue.size) : undefined) });
        for (const p of m.problems) problems.push(`${c.name}, ${queue.size} items (${backend}): ${p}`);
        return m;
      };
      for (const queue of queues) await run(queue, settings.warmupSeconds); // warm-up, discarded
      const rounds = new Map<number, SequenceMeasurement[]>(queues.map((q) => [q.size, []]));
      for (let round = 0; round < settings.rounds; round++) {
        const order = round % 2 === 0 ? queues : [...queues].reverse();
        for (const queue of order) rounds.get(queue.size)!.push(await run(queue, settings.seconds));
      }
      for (const [size, ms] of rounds) {
        const med = (pick: (m: SequenceMeasurement) => number) => Math.round(median(ms.map(pick)) * 1000) / 1000;
        rows.push({
          database: backend,
          case: c.name,
          items: size,
          p50_ms: med((m) => m.latency_ms.p50),
          p95_ms: med((m) => m.latency_ms.p95),
          p99_ms: med((m) => m.latency_ms.p99),
          rps: med((m) => m.rps),
          rounds: ms,
        });
      }
    }
    return rows;
  } finally {
    await loupe.stop();
    await database.drop();
  }
}

/** p95 on the largest queue over p95 on the smallest, per database and case. */
function growth(rows: readonly Row[]) {
  const out: { database: Backend; case: string; p95_growth: number }[] = [];
  for (const key of new Set(rows.map((r) => `${r.database}\u0000${r.case}`))) {
    const [database, name] = key.split('\u0000') as [Backend, string];
    const of = (size: number) => rows.find((r) => r.database === database && r.case === name && r.items === size)!.p95_ms;
    out.push({ database, case: name, p95_growth: Math.round((of(SIZES.at(-1)!) / of(SIZES[0]!)) * 100) / 100 });
  }
  return out;
}

/** The deep page's p95 on the largest queue over the first page's p95 on the smallest, per database. */
function deepRatios(rows: readonly Row[]) {
  const p95 = (database: Backend, name: string, size: number) => rows.find((r) => r.database === database && r.case === name && r.items === size)!.p95_ms;
  return [...new Set(rows.map((r) => r.database))].map((database) => ({
    database,
    [`first page p95 ms at ${SIZES[0]}`]: p95(database, CASES[0]!.name, SIZES[0]!),
    [`${DEEP_CASE} p95 ms at ${SIZES.at(-1)}`]: p95(database, DEEP_CASE, SIZES.at(-1)!),
    ratio: Math.round((p95(database, DEEP_CASE, SIZES.at(-1)!) / p95(database, CASES[0]!.name, SIZES[0]!)) * 100) / 100,
  }));
}

export async function itemsQueryBenchmark(settings: Settings, workDir: string): Promise<Section> {
  const { backends, notes } = benchBackends('items-query');
  const problems: string[] = [];
  const rows: Row[] = [];
  for (const backend of backends) rows.push(...(await measureDatabase(backend, settings, workDir, problems)));
  const growths = growth(rows);
  console.log('\nitems-query: latency of one page of 100 with include_position, one request at a time');
  console.table(rows.map(({ rounds, ...row }) => ({ ...row, 'rounds p95 ms': rounds.map((m) => m.latency_ms.p95).join(' ') })));
  console.table(growths.map((g) => ({ ...g, [`target ≤ ${MAX_GROWTH}`]: g.case === CASES[0]!.name ? (g.p95_growth <= MAX_GROWTH ? 'met' : 'MISSED') : '(no target)' })));
  const deep = deepRatios(rows);
  console.table(deep.map((d) => ({ ...d, [`target ≤ ${MAX_DEEP_RATIO}`]: d.ratio <= MAX_DEEP_RATIO ? 'met' : 'MISSED' })));
  const main = growths.filter((g) => g.case === CASES[0]!.name);
  return {
    name: 'items-query',
    description:
      `POST …/items/query with include_position, limit ${PAGE}, on queues of ${SIZES.join(', ')} items (1 in ${COMPLETED_EVERY} completed), ` +
      `${CONNECTIONS} connection: Loupe alone (its own process, log level ${process.env.LOUPE_LOG_LEVEL ?? 'info'} to a file); ` +
      `and the page at ${DEEP} (the last page of smaller queues) by cursor; the figures are in details (rows, p95_growth, deep_page_ratio), printed above`,
    target: { metric: `p95 at ${SIZES[0]} items / p95 at ${SIZES.at(-1)} items, first page in default order, per database (i.e. growth ≤ ${MAX_GROWTH}×)`, min: 1 / MAX_GROWTH },
    comparisons: [],
    details: { connections: CONNECTIONS, page: PAGE, sizes: SIZES, deep_start: DEEP, notes, p95_growth: growths, deep_page_ratio: deep, max_deep_ratio: MAX_DEEP_RATIO, rows },
    problems,
    passed:
      problems.length === 0 &&
      main.length === backends.length &&
      main.every((g) => g.p95_growth <= MAX_GROWTH) &&
      deep.length === backends.length &&
      deep.every((d) => d.ratio <= MAX_DEEP_RATIO),
  };
}
