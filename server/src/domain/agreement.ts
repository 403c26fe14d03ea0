import { callRef, parseRef, type Agreement, type AgreementLevel, type AnnotationQueueAgreementReq, type Json } from '@loupe/shared';
import type { AuthUser } from '../auth/authenticate.ts';
import { forEachSqliteArray, jsonFromSql, onPostgres, placeholders, sqliteArrays, sqlRows, type SqlScope } from '../db/sql.ts';
import { requireProjectAccess } from './access.ts';
import type { AgreementTask } from './agreement-thread.ts';
import { AgreementDeadline, agreementTimedOut, inAgreementSlot, statisticsInThread } from './agreement-workers.ts';
import { liveQueue } from './annotation-queues.ts';
import { invalid, tooLarge } from './errors.ts';

type SpecRow = { name: string; field_schema: unknown };

/** JSON text of one value, at most: annotation values are labels, numbers, short texts. */
export const MAX_VALUE_CHARS = 65_536;
/** Values (each annotator's latest per item) one spec's agreement compares, at most. */
export const MAX_VALUES = 100_000;
/** JSON text of all those values together, at most. */
export const MAX_VALUES_CHARS = 4 * 1024 * 1024;
/** A record's value is read as the records are scanned when its payload is this short; a longer one only if latest. */
const INLINE_PAYLOAD_BYTES = 4096;
/** Ids per statement when the long values of the latest records are read. */
const IDS_PER_READ = 500;
/** Call ids per statement when PostgreSQL looks up the items of the latest records. */
const CALLS_PER_READ = 5000;

/**
 * `POST /annotation_queues/{queue_id}/agreement`: for each scorer spec of the queue (or each one
 * asked for), the value every annotator gave every live item, and how far they agree
 * (agreement-statistics.ts does the arithmetic). A value is `payload.value` of the annotator's most
 * recently created `svc.annotation.<name>` feedback with that spec's ref and this queue, naming the
 * item's call in `svc_ref` or `call_ref`. Viewers may read it.
 *
 * Bounded per request: the time (`timeoutMs`, then 503), what it holds (MAX_VALUE_CHARS,
 * MAX_VALUES, MAX_VALUES_CHARS per spec, then 413; specs are read one after another), and
 * agreement-workers.ts's slots; the statistics run in a worker thread.
 */
export async function queueAgreement(db: SqlScope, user: AuthUser, req: AnnotationQueueAgreementReq, timeoutMs: number): Promise<Agreement[]> {
  const deadline = new AgreementDeadline(timeoutMs);
  requireProjectAccess(user, req.project_id, 'read');
  const queue = await liveQueue(db, req.project_id, req.queue_id);
  const refs = req.scorer_refs ?? queue.scorerRefs;
  const firstAt = new Map<string, number>();
  for (const [index, ref] of refs.entries()) {
    if (!queue.scorerRefs.includes(ref)) throw invalid(`scorer_refs[${index}] is not a scorer of annotation queue "${queue.id}".`);
    const first = firstAt.get(ref);
    if (first !== undefined) throw invalid(`scorer_refs[${index}] repeats scorer_refs[${first}] (${ref.slice(0, 256)}).`);
    firstAt.set(ref, index);
  }
  for (const ref of Object.keys(req.levels ?? {})) {
    if (!refs.includes(ref)) throw invalid(`levels names ${ref.slice(0, 256)}, which is not a scorer ref of this request.`);
  }

  return inAgreementSlot(deadline, async () => {
    const agreement: Agreement[] = [];
    for (const ref of refs) {
      const spec = await specOf(db, req.project_id, ref);
      const level = req.levels?.[ref] ?? levelOf(spec.field_schema);
      const latest = await latestValues(db, { projectId: req.project_id, queueId: queue.id, specName: spec.name, ref, deadline });
      const items = [...latest.items.values()];
      const statistics = await statisticsInThread(latest.task(level, items), deadline);
      // The values came from stored JSON payloads: they are JSON values.
      const disagreements = statistics.disagreements.map((d) => {
        const item = items[Number(d.item_id)]!;
        return { item_id: item.id, call_id: item.callId, values: d.values.map((v) => ({ ...v, value: v.value as Json })) };
      });
      agreement.push({ scorer_ref: ref, name: spec.name, level, ...statistics, disagreements });
    }
    return agreement;
  });
}

/**
 * An annotator's latest record for an item so far; `text` is null while its value is unread (a
 * long payload on SQLite; one of `chars` characters of JSON, past MAX_VALUE_CHARS, on PostgreSQL).
 */
type Latest = { createdMs: number; id: string; text: string | null; chars: number };
type RatedItemSlot = { id: string; callId: string; createdMs: number; latest: (Latest | undefined)[] };

/**
 * Each annotator's latest record per item of one spec, as the records are read (in any order),
 * holding at most MAX_VALUES records and MAX_VALUES_CHARS of their values' JSON text.
 */
class LatestValues {
  readonly annotators: string[] = [];
  readonly #annotatorIndex = new Map<string, number>();
  readonly items = new Map<string, RatedItemSlot>();
  #count = 0;
  #chars = 0;
  readonly #specName: string;

  constructor(specName: string) {
    this.#specName = specName;
  }

  /** A record of `user` for the item (id, call id, creation time); the later one of an annotator and item wins. */
  add(item: string, callId: string, itemCreatedMs: number, user: string, record: Latest): void {
    let annotator = this.#annotatorIndex.get(user);
    if (annotator === undefined) {
      this.#annotatorIndex.set(user, (annotator = this.annotators.length));
      this.annotators.push(user);
    }
    let slot = this.items.get(item);
    if (!slot) this.items.set(item, (slot = { id: item, callId, createdMs: itemCreatedMs, latest: [] }));
    const held = slot.latest[annotator];
    if (held && !(record.createdMs !== held.createdMs ? record.createdMs > held.createdMs : record.id > held.id)) return;
    if (held) this.#chars -= held.text?.length ?? 0;
    else if (++this.#count > MAX_VALUES) throw tooManyValues(this.#specName);
    slot.latest[annotator] = record;
    this.#setText(slot, user, record, record.text);
  }

  /** Sets the value text of a latest record, within the bounds. */
  setText(slot: RatedItemSlot, user: string, record: Latest, text: string): void {
    this.#setText(slot, user, record, text);
  }

  #setText(slot: RatedItemSlot, user: string, record: Latest, text: string | null): void {
    record.text = text;
    if (text === null) return;
    if (text.length > MAX_VALUE_CHARS) throw valueTooLong(this.#specName, slot.callId, user, text.length);
    this.#chars += text.length;
    if (this.#chars > MAX_VALUES_CHARS) {
      throw tooLarge(
        `The values of spec ${this.#specName} in this queue hold more than ${MAX_VALUES_CHARS.toLocaleString('en')} characters of JSON together, more than the agreement compares.`,
      );
    }
  }

  /** The records whose value is still unread. */
  *unread(): Generator<{ slot: RatedItemSlot; user: string; record: Latest }> {
    for (const slot of this.items.values()) {
      for (const [annotator, record] of slot.latest.entries()) if (record && record.text === null) yield { slot, user: this.annotators[annotator]!, record };
    }
  }

  /** The statistics task of these values, items in the order of `items`. */
  task(level: AgreementLevel, items: RatedItemSlot[]): AgreementTask {
    const textIndex = new Map<string, number>();
    const texts: string[] = [];
    const itemStarts = new Int32Array(items.length + 1);
    const entryAnnotator = new Int32Array(this.#count);
    const entryText = new Int32Array(this.#count);
    let entry = 0;
    for (const [i, slot] of items.entries()) {
      itemStarts[i] = entry;
      for (const [annotator, record] of slot.latest.entries()) {
        if (!record) continue;
        let index = textIndex.get(record.text!);
        if (index === undefined) {
          textIndex.set(record.text!, (index = texts.length));
          texts.push(record.text!);
        }
        entryAnnotator[entry] = annotator;
        entryText[entry++] = index;
      }
    }
    itemStarts[items.length] = entry;
    return {
      level,
      annotators: this.annotators,
      texts,
      itemIds: items.map((slot) => slot.id),
      itemCreatedMs: Float64Array.from(items, (slot) => slot.createdMs),
      itemStarts,
      entryAnnotator,
      entryText,
    };
  }
}

const tooManyValues = (specName: string) =>
  tooLarge(`The agreement of spec ${specName} would compare more than ${MAX_VALUES.toLocaleString('en')} values (each annotator's latest per item), more than it holds.`);

const valueTooLong = (specName: string, callId: string, user: string, chars: number) =>
  tooLarge(
    `The value of spec ${specName} that annotator ${user} gave the item of call ${callId} is ${chars.toLocaleString('en')} characters of JSON; agreement compares values of at most ${MAX_VALUE_CHARS.toLocaleString('en')}.`,
  );

/**
 * Each annotator's latest annotation record per live item of one spec in one queue, with its
 * value's JSON text. A record counts for the item whose call its svc_ref names, else for the one
 * its call_ref names; the later record of an annotator and item wins (creation time, then id:
 * feedback ids are lowercase UUIDs, which sort the same in JavaScript as in either database).
 */
async function latestValues(db: SqlScope, scope: ValuesScope): Promise<LatestValues> {
  const latest = new LatestValues(scope.specName);
  // The call ids in the refs, cut out by the database.
  const prefix = callRef(scope.projectId, '');
  const prefixLength = [...prefix].length; // characters, as substr counts them on both databases
  const callOf = (column: string) => `case when substr(${column}, 1, ${prefixLength}) = ? then substr(${column}, ${prefixLength + 1}) end`;
  const where = 'f.project_id = ? and f.queue_id = ? and f.feedback_type = ? and f.annotation_ref = ?';
  const params = [scope.projectId, scope.queueId, `svc.annotation.${scope.specName}`, scope.ref];
  if (onPostgres(db)) await latestOnPostgres(db, scope, latest, { prefix, callOf, where, params });
  else await latestOnSqlite(db, scope, latest, { prefix, callOf, where, params });
  for (const { slot, user, record } of latest.unread()) throw valueTooLong(scope.specName, slot.callId, user, record.chars);
  return latest;
}

type ValuesScope = { projectId: string; queueId: string; specName: string; ref: string; deadline: AgreementDeadline };
type RecordsSql = { prefix: string; callOf: (column: string) => string; where: string; params: unknown[] };

/**
 * PostgreSQL keeps only the latest record per annotator and pair of refs (`distinct on`, sorted in
 * its own process), at most MAX_VALUES + 1 of them; then the
 * live items of the calls they name, by the unique index (queue_id, call_id). Not one join: a
 * planner without statistics (a queue just filled) may read every item of the queue per record.
 */
async function latestOnPostgres(db: SqlScope, scope: ValuesScope, latest: LatestValues, records: RecordsSql): Promise<void> {
  const { deadline } = scope;
  // Times as epoch milliseconds in a float8 (exact below 2^53): no Date per row. Annotation
  // payloads always hold a value (feedback-rules.ts): SQL NULL never stands for one.
  type Row = { svc_user_id: string; svc_call: string | null; ref_call: string | null; created_ms: number; id: string; chars: number; value: string | null };
  // Grouped by the call ids the refs name rather than by the refs: records whose refs name no call
  // of the project count only by their other ref, so they resolve to the same item either way,
  // and the sort (bytewise, collate "C": it only groups) carries fewer bytes. Short payloads'
  // values are read as the records are scanned; a long one's by its id (a subquery per row, which
  // the limit keeps apart), for the latest records alone, so the sort never carries a long value.
  const sql = `select svc_user_id, svc_call, ref_call, created_ms, id, length(value) as chars, case when length(value) <= ? then value end as value
                 from (select r.svc_user_id, r.svc_call, r.ref_call, r.created_ms, r.id,
                              coalesce(r.value, (select (v.payload -> 'value')::text from feedback v where v.project_id = ? and v.id = r.id)) as value
                         from (select distinct on (svc_user_id collate "C", svc_call collate "C", ref_call collate "C") *
                                 from (select f.id, f.svc_user_id, ${records.callOf('f.svc_ref')} as svc_call, ${records.callOf('f.call_ref')} as ref_call,
                                              f.created_at, (extract(epoch from f.created_at) * 1000)::float8 as created_ms,
                                              case when pg_column_size(f.payload) <= ? then (f.payload -> 'value')::text end as value
                                         from feedback f
                                        where ${records.where}) f
                                order by svc_user_id collate "C", svc_call collate "C", ref_call collate "C", created_at desc, id collate "C" desc) r
                        limit ?) latest`;
  const rows = await beforeDeadline(
    sqlRows<Row>(db, sql, [MAX_VALUE_CHARS, scope.projectId, records.prefix, records.prefix, INLINE_PAYLOAD_BYTES, ...records.params, MAX_VALUES + 1]),
    deadline,
  );
  if (rows.length > MAX_VALUES) throw tooManyValues(scope.specName);
  const calls = new Set<string>();
  for (const row of rows) {
    if (row.svc_call !== null) calls.add(row.svc_call);
    if (row.ref_call !== null) calls.add(row.ref_call);
  }
  type ItemRow = { id: string; call_id: string; created_ms: number };
  const items = new Map<string, ItemRow>();
  const callIds = [...calls];
  for (let start = 0; start < callIds.length; start += CALLS_PER_READ) {
    deadline.check();
    const part = callIds.slice(start, start + CALLS_PER_READ);
    const found = await sqlRows<ItemRow>(
      db,
      `select id, call_id, (extract(epoch from created_at) * 1000)::float8 as created_ms
         from annotation_queue_items where queue_id = ? and deleted_at is null and call_id = any(?)`,
      [scope.queueId, part],
    );
    for (const item of found) items.set(item.call_id, item);
  }
  for (const row of rows) {
    const item = (row.svc_call === null ? undefined : items.get(row.svc_call)) ?? (row.ref_call === null ? undefined : items.get(row.ref_call));
    if (item) latest.add(item.id, item.call_id, item.created_ms, row.svc_user_id, { createdMs: row.created_ms, id: row.id, text: row.value, chars: row.chars });
  }
}

/**
 * SQLite scans the spec's records by feedback_queue_idx, each joined to its item by the unique
 * index (queue_id, call_id), without a sort (its synchronous driver would hold the event loop for
 * a whole sort), in slices that let the loop turn (sql.ts's forEachSqliteArray). A record's value
 * is read as it is scanned when its payload is short; the others' afterwards, for the latest
 * records alone, by id.
 */
async function latestOnSqlite(db: SqlScope, scope: ValuesScope, latest: LatestValues, records: RecordsSql): Promise<void> {
  const { deadline } = scope;
  const item = (alias: string, column: string) =>
    `left join annotation_queue_items ${alias} on ${alias}.queue_id = f.queue_id and ${alias}.deleted_at is null and ${alias}.call_id = ${records.callOf(`f.${column}`)}`;
  const itemColumn = (column: string) => `case when si.id is not null then si.${column} else ri.${column} end`;
  // created_at holds epoch milliseconds.
  const sql = `select ${itemColumn('id')}, ${itemColumn('call_id')}, ${itemColumn('created_at')}, f.svc_user_id, f.created_at, f.id,
                      case when octet_length(f.payload) <= ? then json(f.payload -> '$.value') end
                 from feedback f ${item('si', 'svc_ref')} ${item('ri', 'call_ref')}
                where ${records.where} and (si.id is not null or ri.id is not null)`;
  await forEachSqliteArray(db, sql, [INLINE_PAYLOAD_BYTES, records.prefix, records.prefix, ...records.params], (row) => {
    deadline.check();
    const [itemId, callId, itemMs, user, createdMs, id, text] = row as [string, string, number, string, number, string, string | null];
    latest.add(itemId, callId, itemMs, user, { createdMs, id, text, chars: 0 });
  });
  // The latest records with long payloads: their values by id, a few at a time.
  const unread = [...latest.unread()];
  for (let start = 0; start < unread.length; start += IDS_PER_READ) {
    deadline.check();
    const part = unread.slice(start, start + IDS_PER_READ);
    const byId = new Map(part.map((entry) => [entry.record.id, entry]));
    const rows = await sqliteArrays(
      db,
      `select id, length(value), case when length(value) <= ? then value end
         from (select id, json(payload -> '$.value') as value from feedback where project_id = ? and id in (${placeholders(part.length)}))`,
      [MAX_VALUE_CHARS, scope.projectId, ...byId.keys()],
    );
    for (const [id, chars, text] of rows as [string, number, string | null][]) {
      const { slot, user, record } = byId.get(id)!;
      if (text === null) throw valueTooLong(scope.specName, slot.callId, user, chars);
      latest.setText(slot, user, record, text);
    }
  }
}

/** `work`'s result, or the deadline's 503 if it comes first (the statement itself ends by statement_timeout). */
async function beforeDeadline<T>(work: Promise<T>, deadline: AgreementDeadline): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(agreementTimedOut(deadline.timeoutMs)), Math.max(0, deadline.remainingMs));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
    work.catch(() => undefined);
  }
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
