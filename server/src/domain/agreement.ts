import { callRef, parseRef, type Agreement, type AgreementLevel, type AnnotationQueueAgreementReq, type Json } from '@loupe/shared';
import { jsonFromSql, onPostgres, sqliteArrays, sqlRows, sqlRun, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import type { AgreementTask } from './agreement-thread.ts';
import { AgreementDeadline, agreementTimedOut, inAgreementSlot, statisticsInThread } from './agreement-workers.ts';
import { liveQueue } from './annotation-queues.ts';
import { invalid, tooLarge } from './errors.ts';

type SpecRow = { name: string; field_schema: unknown };

/** JSON text of one value, at most: annotation values are labels, numbers, short texts. */
export const MAX_VALUE_CHARS = 65_536;
/** Values (each annotator's latest record per item, and per pair of call ids on the way) one spec's agreement holds, at most. */
export const MAX_VALUES = 100_000;
/** JSON text of all those values together, at most. */
export const MAX_VALUES_CHARS = 4 * 1024 * 1024;
/** A record's value is read as the records are scanned when its payload is this short; a longer one only if latest. */
const INLINE_PAYLOAD_BYTES = 4096;
/** Records per statement (SQLite) or fetch from a cursor (PostgreSQL) when a spec's records are read. */
const RECORDS_PER_READ = 2000;
/** Ids per statement when the long values of the latest records are read. */
const IDS_PER_READ = 500;
/** Call ids per statement when the items of the latest records are looked up (SQLite takes up to 32,766 parameters). */
const CALLS_PER_READ = 5000;

/**
 * `POST /annotation_queues/{queue_id}/agreement`: for each scorer spec of the queue (or each one
 * asked for), the value every annotator gave every live item, and how far they agree
 * (agreement-statistics.ts does the arithmetic). A value is `payload.value` of the annotator's most
 * recently created `svc.annotation.<name>` feedback with that spec's ref and this queue, naming the
 * item's call in `svc_ref` or `call_ref`. Viewers may read it. Contract 5.11: only the items the
 * queue's overlap covers are compared (the others need one annotator), and in an assigned queue
 * only its assignees' values count.
 *
 * Bounded per request: the time (`timeoutMs`, then 503), what it holds (MAX_VALUE_CHARS,
 * MAX_VALUES, MAX_VALUES_CHARS per spec, then 413; specs are read one after another), and
 * agreement-workers.ts's slots; the statistics run in a worker thread.
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

  return inAgreementSlot(deadline, async () => {
    const agreement: Agreement[] = [];
    for (const ref of refs) {
      const spec = await specOf(db, req.project_id, ref);
      const level = req.levels?.[ref] ?? levelOf(spec.field_schema);
      const latest = await latestValues(db, {
        projectId: req.project_id,
        queueId: queue.id,
        specName: spec.name,
        ref,
        deadline,
        assignedOnly: queue.access === 'assigned',
        coverage: Number(queue.overlap_coverage),
      });
      const items = [...latest.items.values()];
      // Free text is compared as it is (who gave a value, where they differ) but not rated.
      const computed = await statisticsInThread(latest.task(level ?? 'nominal', items), deadline);
      const statistics = level === null ? unrated(computed) : computed;
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

/** An annotator's latest record for an item so far; `text` is null while its value is unread (a long payload). */
type Latest = { createdMs: number; id: string; text: string | null };
/** A live item of the queue: its id, its call's id, when it was added. */
type RatedItem = { id: string; callId: string; createdMs: number };
type RatedItemSlot = RatedItem & { latest: (Latest | undefined)[] };
/** A latest record as held for an item and annotator. */
type HeldRecord = { slot: RatedItemSlot; user: string; record: Latest };

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

  /** A record of `user` for the item; the later one of an annotator and item wins. */
  add(item: RatedItem, user: string, record: Latest): void {
    let annotator = this.#annotatorIndex.get(user);
    if (annotator === undefined) {
      this.#annotatorIndex.set(user, (annotator = this.annotators.length));
      this.annotators.push(user);
    }
    let slot = this.items.get(item.id);
    if (!slot) this.items.set(item.id, (slot = { ...item, latest: [] }));
    const held = slot.latest[annotator];
    if (held && !(record.createdMs !== held.createdMs ? record.createdMs > held.createdMs : record.id > held.id)) return;
    if (held) this.#chars -= held.text?.length ?? 0;
    else if (++this.#count > MAX_VALUES) throw tooManyValues(this.#specName);
    slot.latest[annotator] = record;
    this.#setText({ slot, user, record }, record.text);
  }

  /** Sets the value text of a latest record, within the bounds. */
  setText(held: HeldRecord, text: string): void {
    this.#setText(held, text);
  }

  #setText({ slot, user, record }: HeldRecord, text: string | null): void {
    record.text = text;
    if (text === null) return;
    if (text.length > MAX_VALUE_CHARS) throw valueTooLong({ specName: this.#specName, callId: slot.callId, user, chars: text.length });
    this.#chars += text.length;
    if (this.#chars > MAX_VALUES_CHARS) throw tooManyChars(this.#specName);
  }

  /** The records whose value is still unread. */
  *unread(): Generator<HeldRecord> {
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
        // A record purged before its long value was read counts no more.
        if (!record || record.text === null) continue;
        let index = textIndex.get(record.text);
        if (index === undefined) {
          textIndex.set(record.text, (index = texts.length));
          texts.push(record.text);
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

const tooManyChars = (specName: string) =>
  tooLarge(`The values of spec ${specName} in this queue hold more than ${MAX_VALUES_CHARS.toLocaleString('en')} characters of JSON together, more than the agreement compares.`);

const valueTooLong = ({ specName, callId, user, chars }: { specName: string; callId: string; user: string; chars: number }) =>
  tooLarge(
    `The value of spec ${specName} that annotator ${user} gave the item of call ${callId} is ${chars.toLocaleString('en')} characters of JSON; agreement compares values of at most ${MAX_VALUE_CHARS.toLocaleString('en')}.`,
  );

/**
 * Each annotator's latest annotation record per live item of one spec in one queue, with its
 * value's JSON text. A record counts for the item whose call its svc_ref names, else for the one
 * its call_ref names; the later record of an annotator and item wins (creation time, then id:
 * feedback ids are lowercase UUIDs, which sort the same in JavaScript as in either database).
 *
 * First each annotator's latest record per pair of call ids its refs name (records whose refs
 * name no call of the project count by their other ref alone, so they reach the same item either
 * way); then the live items of those calls, by the unique index (queue_id, call_id), a few
 * thousand calls per statement (a join per record cost SQLite several times the scan, and a
 * PostgreSQL planner without statistics, on a queue just filled, may read every item per record).
 */
async function latestValues(db: SqlScope, scope: ValuesScope): Promise<LatestValues> {
  const { deadline } = scope;
  // The call ids in the refs, cut out by the database.
  const prefix = callRef(scope.projectId, '');
  const prefixLength = [...prefix].length; // characters, as substr counts them on both databases
  // The lengths are the code's own numbers, written into the text: the same text for every spec.
  const callOf = (column: string) =>
    sql`case when substr(${sql.raw(column)}, 1, ${sql.raw(String(prefixLength))}) = ${prefix} then substr(${sql.raw(column)}, ${sql.raw(String(prefixLength + 1))}) end`;
  const records: RecordsSql = {
    svcCall: callOf('f.svc_ref'),
    refCall: callOf('f.call_ref'),
    where: sql`f.project_id = ${scope.projectId} and f.queue_id = ${scope.queueId} and f.feedback_type = ${`svc.annotation.${scope.specName}`} and f.annotation_ref = ${scope.ref}${
      scope.assignedOnly ? sql` and exists (select 1 from annotation_queue_assignees a where a.queue_id = ${scope.queueId} and a.user_id = f.svc_user_id)` : sql``
    }`,
  };
  const byRefs = onPostgres(db) ? await latestByRefsOnPostgres(db, scope, records) : await latestByRefsOnSqlite(db, scope, records);

  const calls = new Set<string>();
  for (const record of byRefs) {
    if (record.svcCall !== null) calls.add(record.svcCall);
    if (record.refCall !== null) calls.add(record.refCall);
  }
  const items = new Map<string, { id: string; callId: string; createdMs: number }>();
  const callIds = [...calls];
  for (let start = 0; start < callIds.length; start += CALLS_PER_READ) {
    deadline.check();
    const part = callIds.slice(start, start + CALLS_PER_READ);
    for (const [id, callId, createdMs] of await liveItemsOfCalls(db, { queueId: scope.queueId, coverage: scope.coverage, callIds: part })) items.set(callId, { id, callId, createdMs });
  }

  const latest = new LatestValues(scope.specName);
  for (const record of byRefs) {
    const item = (record.svcCall === null ? undefined : items.get(record.svcCall)) ?? (record.refCall === null ? undefined : items.get(record.refCall));
    if (item) latest.add(item, record.user, { createdMs: record.createdMs, id: record.id, text: record.text });
  }
  // The latest records whose payload was too long to read in the scan: their values by id.
  const unread = [...latest.unread()];
  for (let start = 0; start < unread.length; start += IDS_PER_READ) {
    deadline.check();
    const part = unread.slice(start, start + IDS_PER_READ);
    const byId = new Map(part.map((entry) => [entry.record.id, entry]));
    for (const [id, chars, text] of await valuesById(db, scope.projectId, [...byId.keys()])) {
      const held = byId.get(id)!;
      if (text === null) throw valueTooLong({ specName: scope.specName, callId: held.slot.callId, user: held.user, chars });
      latest.setText(held, text);
    }
  }
  return latest;
}

type ValuesScope = {
  projectId: string;
  queueId: string;
  specName: string;
  ref: string;
  deadline: AgreementDeadline;
  /** An assigned queue: only its assignees' values count. */
  assignedOnly: boolean;
  /** The queue's overlap coverage: only the items it covers are compared (coverage.ts). */
  coverage: number;
};
/** The pieces of the statement that reads a spec's records: the call ids of its two refs, and its filter. */
type RecordsSql = { svcCall: Statement; refCall: Statement; where: Statement };
/** An annotator's latest record for a pair of call ids (null where a ref names no call of the project); `text` as in Latest. */
type RefsRecord = { user: string; svcCall: string | null; refCall: string | null; createdMs: number; id: string; text: string | null };
/** A RefsRecord as SQLite's JSON array of a chunk holds it, in RefsRecord's order. */
type RefsRecordTuple = [string, string | null, string | null, number, string, string | null];

/**
 * Each annotator's latest record per pair of call ids, kept as the records are read in any order:
 * at most MAX_VALUES of them, and MAX_VALUES_CHARS of the values read.
 */
class LatestByRefs {
  readonly #latest = new Map<string, RefsRecord>();
  #chars = 0;
  readonly #specName: string;

  constructor(specName: string) {
    this.#specName = specName;
  }

  add(record: RefsRecord): void {
    const { user, svcCall, refCall, createdMs, id, text } = record;
    // Call ids are never empty and hold no newline.
    const key = `${user}\n${svcCall ?? ''}\n${refCall ?? ''}`;
    const held = this.#latest.get(key);
    if (held && !(createdMs !== held.createdMs ? createdMs > held.createdMs : id > held.id)) return;
    if (!held && this.#latest.size >= MAX_VALUES) throw tooManyValues(this.#specName);
    this.#chars += (text?.length ?? 0) - (held?.text?.length ?? 0);
    if (this.#chars > MAX_VALUES_CHARS) throw tooManyChars(this.#specName);
    this.#latest.set(key, record);
  }

  records(): RefsRecord[] {
    return [...this.#latest.values()];
  }
}

/**
 * PostgreSQL reads the spec's records through a cursor (in a read-only transaction),
 * RECORDS_PER_READ at a time, in the order it finds them (no sort: a window or `distinct on`
 * over annotator and refs made it sort every record, twice the cost of the read).
 */
async function latestByRefsOnPostgres(db: SqlScope, scope: ValuesScope, records: RecordsSql): Promise<RefsRecord[]> {
  const latest = new LatestByRefs(scope.specName);
  // Times as epoch milliseconds in a float8 (exact below 2^53): no Date per row.
  type Row = { svc_user_id: string; svc_call: string | null; ref_call: string | null; created_ms: number; id: string; value: string | null };
  await sqlTransaction(db, async (tx) => {
    await sqlRun(tx, sql`set transaction read only`);
    await sqlRun(
      tx,
      sql`declare agreement_records no scroll cursor for
         select f.svc_user_id, ${records.svcCall} as svc_call, ${records.refCall} as ref_call,
                (extract(epoch from f.created_at) * 1000)::float8 as created_ms, f.id,
                case when pg_column_size(f.payload) <= ${INLINE_PAYLOAD_BYTES} then (f.payload -> 'value')::text end as value
           from feedback f
          where ${records.where}`,
    );
    for (;;) {
      scope.deadline.check();
      const rows = await beforeDeadline(sqlRows<Row>(tx, sql`fetch ${sql.raw(String(RECORDS_PER_READ))} from agreement_records`), scope.deadline);
      for (const row of rows) latest.add({ user: row.svc_user_id, svcCall: row.svc_call, refCall: row.ref_call, createdMs: row.created_ms, id: row.id, text: row.value });
      if (rows.length < RECORDS_PER_READ) break;
    }
  });
  return latest.records();
}

/**
 * SQLite reads the spec's records by feedback_queue_idx in chunks of RECORDS_PER_READ in rowid
 * order (a range of that index: no sort, which its synchronous driver would run in one piece),
 * each one statement built as one JSON array by the database (one JSON.parse costs much less than
 * a driver row per record), letting the event loop and other statements run between chunks.
 */
async function latestByRefsOnSqlite(db: SqlScope, scope: ValuesScope, records: RecordsSql): Promise<RefsRecord[]> {
  const latest = new LatestByRefs(scope.specName);
  // created_at holds epoch milliseconds. `|| ''` makes the value's JSON plain text, which
  // json_array takes as a string (the JSON text the statistics parse) rather than as JSON.
  const chunkAfter = (after: number) =>
    sql`select json_group_array(json_array(svc_user_id, svc_call, ref_call, created_at, id, value)), max(rid), count(*)
          from (select f.rowid as rid, f.svc_user_id, ${records.svcCall} as svc_call, ${records.refCall} as ref_call,
                       f.created_at, f.id, case when octet_length(f.payload) <= ${INLINE_PAYLOAD_BYTES} then json(f.payload -> '$.value') || '' end as value
                  from feedback f
                 where ${records.where} and f.rowid > ${after}
                 order by f.rowid
                 limit ${RECORDS_PER_READ})`;
  for (let after = 0; ; ) {
    scope.deadline.check();
    const [[chunk, last, count]] = (await sqliteArrays(db, chunkAfter(after))) as [[string, number, number]];
    for (const [user, svcCall, refCall, createdMs, id, text] of JSON.parse(chunk) as RefsRecordTuple[]) latest.add({ user, svcCall, refCall, createdMs, id, text });
    if (count < RECORDS_PER_READ) break;
    after = last;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return latest.records();
}

/** [id, call id, creation time in epoch milliseconds] of the live items of the queue among these calls that its overlap covers. */
async function liveItemsOfCalls(db: SqlScope, { queueId, coverage, callIds }: { queueId: string; coverage: number; callIds: string[] }): Promise<[string, string, number][]> {
  if (onPostgres(db)) {
    type Row = { id: string; call_id: string; created_ms: number };
    const rows = await sqlRows<Row>(
      db,
      sql`select id, call_id, (extract(epoch from created_at) * 1000)::float8 as created_ms
            from annotation_queue_items where queue_id = ${queueId} and deleted_at is null and call_id = any(${callIds}) and coverage_point < ${coverage}`,
    );
    return rows.map((row) => [row.id, row.call_id, row.created_ms]);
  }
  const rows = await sqliteArrays(
    db,
    sql`select id, call_id, created_at from annotation_queue_items
         where queue_id = ${queueId} and deleted_at is null and call_id in (${sql.list(callIds)}) and coverage_point < ${coverage}`,
  );
  return rows as [string, string, number][];
}

/** [id, characters of JSON, the value's JSON text when at most MAX_VALUE_CHARS] of these records. */
async function valuesById(db: SqlScope, projectId: string, ids: string[]): Promise<[string, number, string | null][]> {
  const valueOf = sql.raw(onPostgres(db) ? `(payload -> 'value')::text` : `json(payload -> '$.value')`);
  const statement = sql`select id, length(value) as chars, case when length(value) <= ${MAX_VALUE_CHARS} then value end as value
                          from (select id, ${valueOf} as value from feedback where project_id = ${projectId} and id in (${sql.list(ids)})) v`;
  if (!onPostgres(db)) return (await sqliteArrays(db, statement)) as [string, number, string | null][];
  type Row = { id: string; chars: number; value: string | null };
  return (await sqlRows<Row>(db, statement)).map((row) => [row.id, row.chars, row.value]);
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
