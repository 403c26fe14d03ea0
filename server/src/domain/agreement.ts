import { callRef, parseRef, type Agreement, type AgreementLevel, type AnnotationQueueAgreementReq, type Json } from '@loupe/shared';
import type { AuthUser } from './auth-user.ts';
import { jsonFromSql, onPostgres, sqlRows, type SqlScope } from '../db/sql.ts';
import { requireProjectAccess } from './access.ts';
import { agreementStatistics, type RatedItem } from './agreement-statistics.ts';
import { liveQueue } from './annotation-queues.ts';
import { invalid } from './errors.ts';

type ItemRow = { id: string; call_id: string };
type SpecRow = { name: string; field_schema: unknown };
/**
 * One annotation record: svc_user_id, the call id in svc_ref and in call_ref (null where that ref
 * names no call of the project), creation time in epoch milliseconds, id, `payload.value`.
 */
type ValueRow = [user: string, svcCall: string | null, refCall: string | null, createdMs: number, id: string, value: unknown];

/**
 * `POST /annotation_queues/{queue_id}/agreement`: for each scorer spec of the queue (or each one
 * asked for), the value every annotator gave every live item, and how far they agree
 * (agreement-statistics.ts does the arithmetic). A value is `payload.value` of the annotator's most
 * recently created `svc.annotation.<name>` feedback with that spec's ref and this queue, naming the
 * item's call in `svc_ref` or `call_ref`. Viewers may read it.
 */
export async function queueAgreement(db: SqlScope, user: AuthUser, req: AnnotationQueueAgreementReq): Promise<Agreement[]> {
  requireProjectAccess(user, req.project_id, 'read');
  const queue = await liveQueue(db, req.project_id, req.queue_id);
  const refs = req.scorer_refs ?? queue.scorerRefs;
  for (const [index, ref] of refs.entries()) {
    if (!queue.scorerRefs.includes(ref)) throw invalid(`scorer_refs[${index}] is not a scorer of annotation queue "${queue.id}".`);
  }
  for (const ref of Object.keys(req.levels ?? {})) {
    if (!refs.includes(ref)) throw invalid(`levels names ${ref.slice(0, 256)}, which is not a scorer ref of this request.`);
  }

  // Item order: the order items were added (the items query's default order).
  const items = await sqlRows<ItemRow>(db, 'select id, call_id from annotation_queue_items where queue_id = ? and deleted_at is null order by created_at, id', [queue.id]);
  const itemOfCall = new Map(items.map((item, index) => [item.call_id, index]));

  const agreement: Agreement[] = [];
  for (const ref of refs) {
    const spec = await specOf(db, req.project_id, ref);
    const level = req.levels?.[ref] ?? levelOf(spec.field_schema);
    // Per item (by its index), per annotator (by the order they were met), the record whose value
    // counts: arrays rather than objects keyed by user id, which are slow to build and to walk.
    const annotators: string[] = [];
    const annotatorIndex = new Map<string, number>();
    const latestOf: (ValueRow | undefined)[][] = [];
    for (const row of await annotationValues(db, req.project_id, queue.id, spec.name, ref)) {
      const at = (row[1] === null ? undefined : itemOfCall.get(row[1])) ?? (row[2] === null ? undefined : itemOfCall.get(row[2]));
      if (at === undefined) continue;
      let annotator = annotatorIndex.get(row[0]);
      if (annotator === undefined) {
        annotatorIndex.set(row[0], (annotator = annotators.length));
        annotators.push(row[0]);
      }
      const latest = (latestOf[at] ??= []);
      const held = latest[annotator];
      if (!held || isLater(row, held)) latest[annotator] = row;
    }
    // Items without values change nothing; the rest go in item order.
    const rated: RatedItem[] = [];
    for (let at = 0; at < items.length; at++) {
      const latest = latestOf[at];
      if (!latest) continue;
      const values: Record<string, unknown> = Object.create(null);
      for (let annotator = 0; annotator < latest.length; annotator++) {
        const row = latest[annotator];
        if (row) values[annotators[annotator]!] = row[5];
      }
      rated.push({ item_id: items[at]!.id, call_id: items[at]!.call_id, values });
    }
    const statistics = agreementStatistics(rated, level);
    // The values came from stored JSON payloads: they are JSON values.
    const disagreements = statistics.disagreements.map((d) => ({ ...d, values: d.values.map((v) => ({ ...v, value: v.value as Json })) }));
    agreement.push({ scorer_ref: ref, name: spec.name, level, ...statistics, disagreements });
  }
  return agreement;
}

/**
 * Every annotation record of one spec in one queue: its annotator, the call ids its refs name, its
 * creation time and id, and its `payload.value` — in no particular order. The caller keeps each
 * annotator's latest record per item (`isLater`); the records it drops (earlier values replaced
 * later) are few, and keeping only the latest in SQL costs more than reading them: a window over
 * (annotator, refs, newest first) made PostgreSQL sort every record (its planner rightly prefers
 * reading the queue's records in table order to an index scan of half the table), doubling the
 * query's CPU; on SQLite the grouping cost half as much again as the reading. Both find the
 * records by feedback_queue_idx (queue_id, annotation_ref) when they are a small part of the table.
 *
 * SQLite returns them as one JSON array of arrays built by the database: one JSON.parse costs much
 * less than tens of thousands of driver rows (node:sqlite makes each an object in dictionary mode).
 * On PostgreSQL that JSON (json_build_array per row) costs more than the rows.
 */
async function annotationValues(db: SqlScope, projectId: string, queueId: string, specName: string, ref: string): Promise<ValueRow[]> {
  // The call ids in the refs, cut out by the database: shorter strings to read and look up.
  const prefix = callRef(projectId, '');
  const prefixLength = [...prefix].length; // characters, as substr counts them on both databases
  const callOf = (column: string) => `case when substr(${column}, 1, ${prefixLength}) = ? then substr(${column}, ${prefixLength + 1}) end`;
  const where = 'project_id = ? and queue_id = ? and feedback_type = ? and annotation_ref = ?';
  const params = [prefix, prefix, projectId, queueId, `svc.annotation.${specName}`, ref];
  // Annotation payloads always hold a value (feedback-rules.ts): SQL NULL never stands for one.
  if (onPostgres(db)) {
    // The creation time as epoch milliseconds in a float8 (exact below 2^53): no Date per row.
    type Row = { svc_user_id: string; svc_call: string | null; ref_call: string | null; created_ms: number; id: string; value: unknown };
    const rows = await sqlRows<Row>(
      db,
      `select svc_user_id, ${callOf('svc_ref')} as svc_call, ${callOf('call_ref')} as ref_call,
              (extract(epoch from created_at) * 1000)::float8 as created_ms, id, payload -> 'value' as value
         from feedback
        where ${where}`,
      params,
    );
    return rows.map((row) => [row.svc_user_id, row.svc_call, row.ref_call, row.created_ms, row.id, row.value]);
  }
  // created_at holds epoch milliseconds.
  const [result] = await sqlRows<{ records: string }>(
    db,
    `select json_group_array(json_array(svc_user_id, ${callOf('svc_ref')}, ${callOf('call_ref')}, created_at, id, json(payload -> '$.value'))) as records
       from feedback
      where ${where}`,
    params,
  );
  return JSON.parse(result!.records) as ValueRow[];
}

/**
 * Whether record `a` was created after `b`, the later id breaking a tie (feedback ids are
 * lowercase UUIDs, which sort the same in JavaScript as in either database).
 */
function isLater(a: ValueRow, b: ValueRow): boolean {
  return a[3] !== b[3] ? a[3] > b[3] : a[4] > b[4];
}

/** The spec a scorer ref names (a queue's scorer refs were checked to name stored specs). */
async function specOf(db: SqlScope, projectId: string, ref: string): Promise<SpecRow> {
  const parsed = parseRef(ref);
  if (!parsed.ok || parsed.ref.kind !== 'object') throw invalid(`The scorer ref ${ref.slice(0, 256)} is not an object ref.`);
  const [row] = await sqlRows<SpecRow>(db, 'select name, field_schema from annotation_specs where project_id = ? and name = ? and digest = ?', [
    projectId,
    parsed.ref.name,
    parsed.ref.digest,
  ]);
  if (!row) throw invalid(`The scorer ref ${ref.slice(0, 256)} names no stored annotation spec of project ${projectId}.`);
  return { name: row.name, field_schema: jsonFromSql(row.field_schema) };
}

/** The level a spec's schema implies: enums, booleans and strings nominal, integers ordinal, numbers interval. */
export function levelOf(fieldSchema: unknown): AgreementLevel {
  const schema = (fieldSchema ?? {}) as { enum?: unknown; type?: unknown };
  if (schema.enum !== undefined) return 'nominal';
  if (schema.type === 'integer') return 'ordinal';
  if (schema.type === 'number') return 'interval';
  return 'nominal';
}
