import { callRef, parseRef, type Agreement, type AgreementLevel, type AnnotationQueueAgreementReq, type Json } from '@loupe/shared';
import { jsonFromSql, postgresConnectionOf, scopeReader, sqlRows, sqliteFileOf, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { AgreementDeadline } from './agreement-deadline.ts';
import type { AgreementStatistics } from './agreement-statistics.ts';
import { specTask, withItems, type ValuesScope } from './agreement-values.ts';
import type { SpecDatabase } from './agreement-thread.ts';
import { inAgreementSlot, SPECS_AT_ONCE, specInThread, statisticsInThread } from './agreement-workers.ts';
import { liveQueue } from './annotation-queues.ts';
import { invalid } from './errors.ts';

type SpecRow = { name: string; field_schema: unknown };

/**
 * `POST /annotation_queues/{queue_id}/agreement`: for each scorer spec of the queue (or each one
 * asked for), the value every annotator gave every live item, and how far they agree
 * (agreement-statistics.ts does the arithmetic). A value is `payload.value` of the annotator's most
 * recently created `svc.annotation.<name>` feedback with that spec's ref and this queue, naming the
 * item's call in `svc_ref` or `call_ref`. Viewers may read it. Contract 5.11: only the items the
 * queue's overlap covers are compared (the others need one annotator), and in an assigned queue
 * only its assignees' values count.
 *
 * Bounded per request: the time (`timeoutMs`, then 503), what it holds (agreement-values.ts's
 * MAX_VALUE_CHARS, MAX_VALUES, MAX_VALUES_CHARS per spec, then 413; SPECS_AT_ONCE specs at a
 * time), and agreement-workers.ts's slots. Each spec's values are read and computed in a worker
 * thread, through a connection of the thread's own: two specs are read at once, each on a core,
 * and the event loop decodes none of their rows.
 */
export async function queueAgreement(db: SqlScope, req: AnnotationQueueAgreementReq, timeoutMs: number): Promise<Agreement[]> {
  const deadline = new AgreementDeadline(timeoutMs);
  const queue = await liveQueue(db, req.project_id, req.queue_id);
  const scorerRefs = jsonFromSql<string[]>(queue.scorer_refs);
  const refs = req.scorer_refs ?? scorerRefs;
  const firstAt = new Map<string, number>();
  for (const [index, ref] of refs.entries()) {
    if (!scorerRefs.includes(ref)) throw invalid(`scorer_refs[${index}] is not a scorer of annotation queue "${queue.id}".`);
    const first = firstAt.get(ref);
    if (first !== undefined) throw invalid(`scorer_refs[${index}] repeats scorer_refs[${first}] (${ref.slice(0, 256)}).`);
    firstAt.set(ref, index);
  }
  for (const ref of Object.keys(req.levels ?? {})) {
    if (!refs.includes(ref)) throw invalid(`levels names ${ref.slice(0, 256)}, which is not a scorer ref of this request.`);
  }

  const queueItems = { queueId: queue.id, coverage: Number(queue.overlap_coverage) };
  const database = databaseForThreads(db);
  /** One spec's agreement: read and computed in a thread of its own, or (an in-memory database, a transaction) read here and computed in a thread. */
  const specAgreement = async (ref: string): Promise<Agreement> => {
    const spec = await specOf(db, req.project_id, ref);
    const level = req.levels?.[ref] ?? levelOf(spec.field_schema);
    const scope: Omit<ValuesScope, 'deadline'> & { level: AgreementLevel } = {
      projectId: req.project_id,
      queueId: queue.id,
      specName: spec.name,
      ref,
      callRefPrefix: callRef(req.project_id, ''),
      assignedOnly: queue.access === 'assigned',
      level: level ?? 'nominal',
    };
    let computed: AgreementStatistics;
    if (database) computed = await specInThread({ database, queue: queueItems, scope }, deadline);
    else {
      const { task, rated } = await specTask(scopeReader(db), { ...scope, queue: queueItems, deadline });
      computed = withItems(await statisticsInThread(task, deadline), rated);
    }
    // Free text is compared as it is (who gave a value, where they differ) but not rated.
    const statistics = level === null ? unrated(computed) : computed;
    // The values came from stored JSON payloads: they are JSON values.
    const disagreements = statistics.disagreements.map((d) => ({ ...d, values: d.values.map((v) => ({ ...v, value: v.value as Json })) }));
    return { scorer_ref: ref, name: spec.name, level, ...statistics, disagreements };
  };
  return inAgreementSlot(deadline, () => inTurns(refs, SPECS_AT_ONCE, specAgreement));
}

/** Where a thread of its own reads the database the scope reads, when it can (sqliteFileOf, postgresConnectionOf). */
function databaseForThreads(db: SqlScope): SpecDatabase | undefined {
  const file = sqliteFileOf(db);
  if (file) return { sqlite: file };
  const postgresql = postgresConnectionOf(db);
  return postgresql && !db.getKysely().isTransaction ? { postgresql } : undefined;
}

/**
 * `work` for each input, at most `atOnce` at a time, answering the results in the inputs' order.
 * After a failure nothing more starts, and once every work started has ended, the failure of the
 * first input that failed is thrown: no work goes on past the caller's slot.
 */
async function inTurns<I, O>(inputs: readonly I[], atOnce: number, work: (input: I) => Promise<O>): Promise<O[]> {
  const results: O[] = [];
  const failures: { index: number; error: unknown }[] = [];
  let next = 0;
  const turns = async () => {
    while (!failures.length && next < inputs.length) {
      const index = next++;
      try {
        results[index] = await work(inputs[index]!);
      } catch (error) {
        failures.push({ index, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, inputs.length) }, turns));
  if (failures.length) throw failures.reduce((first, failure) => (failure.index < first.index ? failure : first)).error;
  return results;
}

/** The spec a scorer ref names (a queue's scorer refs were checked to name stored specs). */
async function specOf(db: SqlScope, projectId: string, ref: string): Promise<SpecRow> {
  const parsed = parseRef(ref);
  if (!parsed.ok || parsed.ref.kind !== 'object') throw invalid(`The scorer ref ${ref.slice(0, 256)} is not an object ref.`);
  const [row] = await sqlRows<SpecRow>(db, sql`select name, field_schema from annotation_specs where project_id = ${projectId} and name = ${parsed.ref.name} and digest = ${parsed.ref.digest}`);
  if (!row) throw invalid(`The scorer ref ${ref.slice(0, 256)} names no stored annotation spec of project ${projectId}.`);
  return { name: row.name, field_schema: jsonFromSql(row.field_schema) };
}

/**
 * The level a spec's schema implies (contract 5.7): enums and booleans nominal, integers ordinal,
 * numbers interval; free text (a string without enum) none — null. Nullable types count as the
 * type they allow besides null.
 */
export function levelOf(fieldSchema: unknown): AgreementLevel | null {
  const schema = (fieldSchema ?? {}) as { enum?: unknown; const?: unknown; type?: unknown };
  if (schema.enum !== undefined || schema.const !== undefined) return 'nominal';
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((type) => type !== 'null');
  const type = types.length === 1 ? types[0] : undefined;
  if (type === 'integer') return 'ordinal';
  if (type === 'number') return 'interval';
  if (type === 'string') return null;
  return 'nominal';
}

export const FREE_TEXT_REASON = 'free text has no agreement level';

/** The statistics of a free-text spec: its values and pairs as compared, no coefficient. */
function unrated<S extends { alpha: number | null; observed_agreement: number | null; pairs: { kappa: number | null }[]; reason: string | null }>(statistics: S): S {
  return { ...statistics, alpha: null, observed_agreement: null, pairs: statistics.pairs.map((pair) => ({ ...pair, kappa: null })), reason: FREE_TEXT_REASON };
}
