import type { LoupeClient } from '../index.ts';
import { encoder, type ExportFormat } from './encode.ts';
import { pagedBy, pages, type Retry } from './pages.ts';
import { majority, mean, specKind, type SpecKind } from './scores.ts';

// The queue export of the CLI and the web app: one row per item, in queue order, with the call,
// the item's shown state, each annotator's values (named by username) and their majority or mean,
// and the notes and reactions given in the queue.

// Items are read 1,000 at a time: a filter holds at most 1,000 values, and each page's calls and
// feedback are looked up by its call ids.
const ITEM_PAGE = 1000;
const FEEDBACK_PAGE = 10_000;
/** The most user ids projects.users takes at once. */
const USERS_PER_REQUEST = 1000;
const NOTE = 'svc.note.1';
const REACTION = 'svc.reaction.1';

type Item = Awaited<ReturnType<LoupeClient['annotationQueues']['items']['query']['query']>>['items'][number];
type Call = Awaited<ReturnType<LoupeClient['calls']['query']['query']>>['calls'][number];
type Feedback = Awaited<ReturnType<LoupeClient['feedback']['query']['query']>>['result'][number];
type FeedbackQuery = Parameters<LoupeClient['feedback']['query']['query']>[0];
type ItemQuery = Parameters<LoupeClient['annotationQueues']['items']['query']['query']>[0];

export type Spec = { ref: string; name: string; kind: SpecKind };

/** A person in the export: their username, or their id when the project does not name them. */
export type Person = { user_id: string; name: string };

export const ITEM_COLUMNS = [
  'item_id', 'call_id', 'call_op_name', 'call_trace_id', 'call_started_at', 'call_ended_at', 'inputs', 'output',
  'annotation_state', 'annotator', 'annotator_user_id',
];
/** After the value columns: the notes and reactions, then the user id of every username the row names. */
export const TRAILING_COLUMNS = ['notes', 'reactions', 'annotator_user_ids'];

/** What a queue export needs before its first row: the scorer specs and the annotators, named. */
export type QueuePlan = { projectId: string; queueId: string; queueName: string; specs: Spec[]; annotators: Person[]; totalItems: number };

export async function planQueueExport(client: LoupeClient, projectId: string, queueId: string): Promise<QueuePlan> {
  const { queue } = await client.annotationQueues.read.query({ project_id: projectId, queue_id: queueId });
  const { specs } = queue.scorer_refs.length
    ? await client.annotationSpecs.query.query({ project_id: projectId, refs: queue.scorer_refs })
    : { specs: [] };
  const byRef = new Map(specs.map((s) => [s.ref, s]));
  const { stats } = await client.annotationQueues.stats.query({ project_id: projectId, queue_ids: [queueId] });
  // The value columns: everyone with progress in the queue, and everyone with a value (agreement
  // lists them, also those who gave labels without marking progress).
  const { agreement } = queue.scorer_refs.length
    ? await client.annotationQueues.agreement.query({ project_id: projectId, queue_id: queueId })
    : { agreement: [] };
  const ids = [...new Set([...(stats[0]?.by_annotator ?? []).map((a) => a.annotator_user_id), ...agreement.flatMap((a) => a.annotators)])];
  const names = await usernames(client, projectId, ids);
  return {
    projectId,
    queueId,
    queueName: queue.name,
    // The queue's scorer order; a ref whose spec is gone still gets its values, unsummarised.
    specs: queue.scorer_refs.map((ref) => {
      const spec = byRef.get(ref);
      return { ref, name: spec?.name ?? refName(ref), kind: spec ? specKind(spec.field_schema) : 'other' };
    }),
    annotators: ids.map((id) => ({ user_id: id, name: names.get(id) ?? id })).sort((a, b) => byCodePoint(a.name, b.name)),
    totalItems: stats[0]?.total_items ?? 0,
  };
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The usernames the project gives these user ids (projects.users names members and anyone who worked in it). */
async function usernames(client: LoupeClient, projectId: string, ids: readonly string[]): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (let start = 0; start < ids.length; start += USERS_PER_REQUEST) {
    const { users } = await client.projects.users.query({ project_id: projectId, user_ids: ids.slice(start, start + USERS_PER_REQUEST) });
    for (const user of users) names.set(user.user_id, user.username);
  }
  return names;
}

/** `<name>` of `svc:///e/p/object/<name>:<digest>`. */
function refName(ref: string): string {
  return /\/object\/([^/:]+):/.exec(ref)?.[1] ?? ref;
}

function callRef(projectId: string, callId: string): string {
  return `svc:///${projectId}/call/${callId}`;
}

/** CSV columns: the item's, then per spec one per annotator (by username) and the majority or mean, then the trailing ones. */
export function queueColumns(plan: QueuePlan): string[] {
  return [
    ...ITEM_COLUMNS,
    ...plan.specs.flatMap((spec) => [
      ...plan.annotators.map((a) => `${spec.name}.${a.name}`),
      ...(spec.kind === 'nominal' ? [`${spec.name}.majority`] : spec.kind === 'numeric' ? [`${spec.name}.mean`] : []),
    ]),
    ...TRAILING_COLUMNS,
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

type Note = { by: string; user_id: string; note: string; created_at: string };
type Reaction = { by: string; user_id: string; emoji: string; alias: string | null; created_at: string };

/** What the queue's feedback says about one call: values per spec ref and user, notes, reactions. */
type CallFeedback = { values: Map<string, Map<string, unknown>>; notes: Feedback[]; reactions: Feedback[] };

/**
 * The page's feedback in this queue, per call ref: each annotator's latest value per spec — the
 * value of contract 5.7, feedback of type `svc.annotation.<name>` with the spec's annotation_ref —
 * and every note and reaction. Feedback comes in created_at order, so later values win.
 */
async function feedbackOf(client: LoupeClient, plan: QueuePlan, refs: string[], retry: Retry): Promise<Map<string, CallFeedback>> {
  const byCall = new Map<string, CallFeedback>();
  const specRefs = new Set(plan.specs.map((s) => s.ref));
  const feedbackTypes = [...new Set([...plan.specs.map((s) => `svc.annotation.${s.name}`), NOTE, REACTION])];
  for (const chunk of chunkByLength(refs)) {
    const filter = { queue_id: plan.queueId, svc_refs: chunk, feedback_types: feedbackTypes };
    const fetchPage = pagedBy<Feedback>(async (paging) => {
      const answer = await client.feedback.query.query({ project_id: plan.projectId, filter, limit: FEEDBACK_PAGE, ...paging } as FeedbackQuery);
      return { rows: answer.result, next_cursor: answer.next_cursor };
    });
    for await (const rows of pages(fetchPage, undefined, retry)) {
      for (const f of rows) {
        let entry = byCall.get(f.svc_ref);
        if (!entry) byCall.set(f.svc_ref, (entry = { values: new Map(), notes: [], reactions: [] }));
        if (f.feedback_type === NOTE) entry.notes.push(f);
        else if (f.feedback_type === REACTION) entry.reactions.push(f);
        else if (f.annotation_ref && specRefs.has(f.annotation_ref) && 'value' in f.payload) {
          let byUser = entry.values.get(f.annotation_ref);
          if (!byUser) entry.values.set(f.annotation_ref, (byUser = new Map()));
          byUser.set(f.svc_user_id, f.payload.value);
        }
      }
    }
  }
  return byCall;
}

/** One export row (a JSON Lines line): the item, its call, per spec each annotator's value and the summary, notes, reactions. */
function row(plan: QueuePlan, item: Item, call: Call | undefined, feedback: CallFeedback | undefined, nameOf: (id: string) => string): Record<string, unknown> {
  const named = new Map<string, string>();
  const name = (id: string) => {
    const username = nameOf(id);
    named.set(username, id);
    return username;
  };
  const scores: Record<string, unknown> = {};
  for (const spec of plan.specs) {
    const byUser = feedback?.values.get(spec.ref) ?? new Map<string, unknown>();
    const given = Object.fromEntries([...byUser].map(([id, value]) => [name(id), value] as const).sort(([a], [b]) => byCodePoint(a, b)));
    const score: Record<string, unknown> = { values: given };
    if (spec.kind === 'nominal') score.majority = majority([...byUser.values()]);
    if (spec.kind === 'numeric') score.mean = mean([...byUser.values()]);
    scores[spec.name] = score;
  }
  const notes: Note[] = (feedback?.notes ?? []).map((f) => ({ by: name(f.svc_user_id), user_id: f.svc_user_id, note: String(f.payload.note), created_at: f.created_at }));
  const reactions: Reaction[] = (feedback?.reactions ?? []).map((f) => ({
    by: name(f.svc_user_id),
    user_id: f.svc_user_id,
    emoji: String(f.payload.emoji),
    alias: typeof f.payload.alias === 'string' ? f.payload.alias : null,
    created_at: f.created_at,
  }));
  return {
    item_id: item.id,
    call_id: item.call_id,
    call_op_name: item.call_op_name,
    call_trace_id: item.call_trace_id,
    call_started_at: item.call_started_at,
    call_ended_at: item.call_ended_at,
    inputs: call?.inputs ?? null,
    output: call?.output ?? null,
    annotation_state: item.annotation_state,
    annotator: item.annotator_user_id === null ? null : name(item.annotator_user_id),
    annotator_user_id: item.annotator_user_id,
    scores,
    notes,
    reactions,
    annotator_user_ids: Object.fromEntries([...named].sort(([a], [b]) => byCodePoint(a, b))),
  };
}

/** The same row flattened into the CSV columns of queueColumns; notes and reactions one per line, `name: text`. */
function csvRow(plan: QueuePlan, full: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const column of ITEM_COLUMNS) out[column] = full[column];
  const scores = full.scores as Record<string, { values: Record<string, unknown>; majority?: unknown; mean?: unknown }>;
  for (const spec of plan.specs) {
    const score = scores[spec.name]!;
    for (const a of plan.annotators) out[`${spec.name}.${a.name}`] = score.values[a.name] ?? null;
    if (spec.kind === 'nominal') out[`${spec.name}.majority`] = score.majority;
    if (spec.kind === 'numeric') out[`${spec.name}.mean`] = score.mean;
  }
  out.notes = (full.notes as Note[]).map((n) => `${n.by}: ${n.note}`).join('\n');
  out.reactions = (full.reactions as Reaction[]).map((r) => `${r.by}: ${r.emoji}`).join('\n');
  out.annotator_user_ids = full.annotator_user_ids;
  return out;
}

/** A piece of an export: its bytes, and how many items they hold (0 for the CSV header). */
export type ExportChunk = { bytes: Uint8Array<ArrayBuffer>; items: number };

/**
 * The queue's export as encoded chunks, one per page of items (the CSV header first): the caller
 * writes each where it goes (a file, a download) before asking for the next, so at most a page of
 * items, their calls and their feedback is held at a time.
 */
export async function* exportQueue(client: LoupeClient, plan: QueuePlan, format: ExportFormat, { retry }: { retry?: Retry } = {}): AsyncGenerator<ExportChunk> {
  const encode = encoder(format, queueColumns(plan));
  if (encode.header) yield { bytes: encode.header, items: 0 };
  const names = new Map(plan.annotators.map((a) => [a.user_id, a.name]));
  const run: Retry = retry ?? ((call) => call());
  for await (const items of pages(itemPage(client, plan), undefined, run)) {
    const callIds = [...new Set(items.map((i) => i.call_id))];
    const [calls, feedback] = await Promise.all([
      run(() => callsOf(client, plan.projectId, callIds)),
      feedbackOf(client, plan, callIds.map((id) => callRef(plan.projectId, id)), run),
    ]);
    // Notes, reactions and shown states may name people who gave no value: named once, then known.
    const unnamed = new Set<string>();
    for (const item of items) if (item.annotator_user_id !== null && !names.has(item.annotator_user_id)) unnamed.add(item.annotator_user_id);
    for (const f of feedback.values()) for (const r of [...f.notes, ...f.reactions]) if (!names.has(r.svc_user_id)) unnamed.add(r.svc_user_id);
    if (unnamed.size) {
      const found = await run(() => usernames(client, plan.projectId, [...unnamed]));
      for (const id of unnamed) names.set(id, found.get(id) ?? id);
    }
    const nameOf = (id: string) => names.get(id) ?? id;
    const rows = items.map((item) => {
      const full = row(plan, item, calls.get(item.call_id), feedback.get(callRef(plan.projectId, item.call_id)), nameOf);
      return format === 'csv' ? csvRow(plan, full) : full;
    });
    yield { bytes: encode.page(rows), items: items.length };
  }
}
