import type { LoupeClient } from '@loupe/client';
import type { Progress } from '../output.ts';
import type { Count } from './feedback.ts';
import { pagedBy, pages } from './pages.ts';
import { majority, mean, specKind, type SpecKind } from './scores.ts';
import type { RowWriter } from './writer.ts';

// Items are read 1,000 at a time: a filter holds at most 1,000 values, and each page's calls and
// feedback are looked up by its call ids.
const ITEM_PAGE = 1000;
const FEEDBACK_PAGE = 10_000;

type Item = Awaited<ReturnType<LoupeClient['annotationQueues']['items']['query']['query']>>['items'][number];
type Call = Awaited<ReturnType<LoupeClient['calls']['query']['query']>>['calls'][number];
type Feedback = Awaited<ReturnType<LoupeClient['feedback']['query']['query']>>['result'][number];
type FeedbackQuery = Parameters<LoupeClient['feedback']['query']['query']>[0];
type ItemQuery = Parameters<LoupeClient['annotationQueues']['items']['query']['query']>[0];

export type Spec = { ref: string; name: string; kind: SpecKind };

export const ITEM_COLUMNS = [
  'item_id', 'call_id', 'call_op_name', 'call_trace_id', 'call_started_at', 'call_ended_at', 'inputs', 'output',
  'annotation_state', 'annotator_user_id',
];

/** What a queue export needs before its first row: the scorer specs and the annotators. */
export type QueuePlan = { projectId: string; queueId: string; specs: Spec[]; annotators: string[]; totalItems: number };

export async function planQueueExport(client: LoupeClient, projectId: string, queueId: string): Promise<QueuePlan> {
  const { queue } = await client.annotationQueues.read.query({ project_id: projectId, queue_id: queueId });
  const { specs } = queue.scorer_refs.length
    ? await client.annotationSpecs.query.query({ project_id: projectId, refs: queue.scorer_refs })
    : { specs: [] };
  const byRef = new Map(specs.map((s) => [s.ref, s]));
  const { stats } = await client.annotationQueues.stats.query({ project_id: projectId, queue_ids: [queueId] });
  // The CSV's annotator columns: everyone with progress in the queue, and everyone with a value
  // (agreement lists them, also those who gave labels without marking progress).
  const { agreement } = queue.scorer_refs.length
    ? await client.annotationQueues.agreement.query({ project_id: projectId, queue_id: queueId })
    : { agreement: [] };
  const annotators = [
    ...new Set([...(stats[0]?.by_annotator ?? []).map((a) => a.annotator_user_id), ...agreement.flatMap((a) => a.annotators)]),
  ].sort();
  return {
    projectId,
    queueId,
    // The queue's scorer order; a ref whose spec is gone still gets its values, unsummarised.
    specs: queue.scorer_refs.map((ref) => {
      const spec = byRef.get(ref);
      return { ref, name: spec?.name ?? refName(ref), kind: spec ? specKind(spec.field_schema) : 'other' };
    }),
    annotators,
    totalItems: stats[0]?.total_items ?? 0,
  };
}

/** `<name>` of `svc:///e/p/object/<name>:<digest>`. */
function refName(ref: string): string {
  return /\/object\/([^/:]+):/.exec(ref)?.[1] ?? ref;
}

function callRef(projectId: string, callId: string): string {
  return `svc:///${projectId}/call/${callId}`;
}

/** CSV columns: the item's, then per spec one per annotator and the majority or mean. */
export function queueColumns(plan: QueuePlan): string[] {
  return [
    ...ITEM_COLUMNS,
    ...plan.specs.flatMap((spec) => [
      ...plan.annotators.map((a) => `${spec.name}.${a}`),
      ...(spec.kind === 'nominal' ? [`${spec.name}.majority`] : spec.kind === 'numeric' ? [`${spec.name}.mean`] : []),
    ]),
  ];
}

function itemPage(client: LoupeClient, plan: QueuePlan) {
  return pagedBy<Item>(async (paging) => {
    const answer = await client.annotationQueues.items.query.query({ project_id: plan.projectId, queue_id: plan.queueId, limit: ITEM_PAGE, ...paging } as ItemQuery);
    return { rows: answer.items, next_cursor: answer.next_cursor };
  });
}

/**
 * Splits filter values into groups whose JSON stays under `budget` characters: queries travel in
 * the URL of a GET, and servers refuse request heads past 16 KiB (431).
 */
export function chunkByLength(values: string[], budget = 4000): string[][] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let length = 0;
  for (const value of values) {
    const size = encodeURIComponent(JSON.stringify(value)).length + 3;
    if (current.length && length + size > budget) {
      chunks.push(current);
      current = [];
      length = 0;
    }
    current.push(value);
    length += size;
  }
  if (current.length) chunks.push(current);
  return chunks;
}

async function callsOf(client: LoupeClient, projectId: string, callIds: string[]): Promise<Map<string, Call>> {
  const found = new Map<string, Call>();
  for (const chunk of chunkByLength(callIds)) {
    // A page may stop short of its limit (the server's answer budget): follow its cursor.
    let cursor: string | null = null;
    do {
      const page: { calls: Call[]; next_cursor: string | null } = await client.calls.query.query({
        project_id: projectId,
        filter: { call_ids: chunk },
        limit: chunk.length,
        ...(cursor ? { cursor } : {}),
      });
      for (const call of page.calls) found.set(call.id, call);
      cursor = page.next_cursor;
    } while (cursor);
  }
  return found;
}

/**
 * Each annotator's latest value per (call ref, spec ref) among the page's feedback: the value of
 * contract 5.7 — feedback of type `svc.annotation.<name>` with the spec's annotation_ref, in this
 * queue, about the item's call. Feedback comes in created_at order, so later values win.
 */
async function valuesOf(client: LoupeClient, plan: QueuePlan, refs: string[]): Promise<Map<string, Map<string, unknown>>> {
  const values = new Map<string, Map<string, unknown>>();
  if (!plan.specs.length) return values;
  const specRefs = new Set(plan.specs.map((s) => s.ref));
  const feedbackTypes = [...new Set(plan.specs.map((s) => `svc.annotation.${s.name}`))];
  for (const chunk of chunkByLength(refs)) {
    const filter = { queue_id: plan.queueId, svc_refs: chunk, feedback_types: feedbackTypes };
    const fetchPage = pagedBy<Feedback>(async (paging) => {
      const answer = await client.feedback.query.query({ project_id: plan.projectId, filter, limit: FEEDBACK_PAGE, ...paging } as FeedbackQuery);
      return { rows: answer.result, next_cursor: answer.next_cursor };
    });
    for await (const rows of pages(fetchPage)) {
      for (const f of rows) {
        if (!f.annotation_ref || !specRefs.has(f.annotation_ref) || !('value' in f.payload)) continue;
        const key = `${f.svc_ref}\n${f.annotation_ref}`;
        let byUser = values.get(key);
        if (!byUser) values.set(key, (byUser = new Map()));
        byUser.set(f.svc_user_id, f.payload.value);
      }
    }
  }
  return values;
}

/** One export row: the item, its call, and per spec each annotator's value and the summary. */
function row(plan: QueuePlan, item: Item, call: Call | undefined, values: Map<string, Map<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    item_id: item.id,
    call_id: item.call_id,
    call_op_name: item.call_op_name,
    call_trace_id: item.call_trace_id,
    call_started_at: item.call_started_at,
    call_ended_at: item.call_ended_at,
    inputs: call?.inputs ?? null,
    output: call?.output ?? null,
    annotation_state: item.annotation_state,
    annotator_user_id: item.annotator_user_id,
  };
  const scores: Record<string, unknown> = {};
  for (const spec of plan.specs) {
    const byUser = values.get(`${callRef(plan.projectId, item.call_id)}\n${spec.ref}`) ?? new Map<string, unknown>();
    const given = Object.fromEntries([...byUser].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const score: Record<string, unknown> = { values: given };
    if (spec.kind === 'nominal') score.majority = majority([...byUser.values()]);
    if (spec.kind === 'numeric') score.mean = mean([...byUser.values()]);
    scores[spec.name] = score;
  }
  out.scores = scores;
  return out;
}

/** The same row flattened into the CSV columns of queueColumns. */
function csvRow(plan: QueuePlan, full: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const column of ITEM_COLUMNS) out[column] = full[column];
  const scores = full.scores as Record<string, { values: Record<string, unknown>; majority?: unknown; mean?: unknown }>;
  for (const spec of plan.specs) {
    const score = scores[spec.name]!;
    for (const a of plan.annotators) out[`${spec.name}.${a}`] = score.values[a] ?? null;
    if (spec.kind === 'nominal') out[`${spec.name}.majority`] = score.majority;
    if (spec.kind === 'numeric') out[`${spec.name}.mean`] = score.mean;
  }
  return out;
}

/** Streams one row per item of the queue, in queue order. */
export async function exportQueue(client: LoupeClient, plan: QueuePlan, csv: boolean, writer: RowWriter, progress: Progress, count: Count): Promise<void> {
  for await (const items of pages(itemPage(client, plan))) {
    const callIds = [...new Set(items.map((i) => i.call_id))];
    const [calls, values] = await Promise.all([
      callsOf(client, plan.projectId, callIds),
      valuesOf(client, plan, callIds.map((id) => callRef(plan.projectId, id))),
    ]);
    await writer.write(items.map((item) => {
      const full = row(plan, item, calls.get(item.call_id), values);
      return csv ? csvRow(plan, full) : full;
    }));
    count.written += items.length;
    progress.update(count.written, plan.totalItems ? count.written / plan.totalItems : undefined);
  }
}
