import type { AgreementLevel } from '@loupe/shared';
import type { StatementReader } from '../db/statement-reader.ts';
import { sql, type Statement } from '../db/statement.ts';
import { agreementTimedOut, type AgreementDeadline } from './agreement-deadline.ts';
import type { AgreementStatistics } from './agreement-statistics.ts';
import { tooLarge } from './errors.ts';

// One scorer spec's values in one queue, as the agreement (agreement.ts) compares them: each
// annotator's latest record per live item, read in chunks within the request's bounds, and made
// the compact task its statistics are computed on. Read in a worker thread of the spec's own
// (agreement-thread.ts), or on the event loop where no other connection sees the data.

/** JSON text of one value, at most: annotation values are labels, numbers, short texts. */
export const MAX_VALUE_CHARS = 65_536;
/** Values (each annotator's latest record per item) one spec's agreement holds, at most. */
export const MAX_VALUES = 100_000;
/** JSON text of all those values together, at most. */
export const MAX_VALUES_CHARS = 4 * 1024 * 1024;
/** A record's value is read as the records are scanned when its payload is this short; a longer one only if latest. */
const INLINE_PAYLOAD_BYTES = 1024;
/**
 * Records per statement (SQLite) or fetch from a cursor (PostgreSQL) when a spec's records are
 * read: on PostgreSQL, fetches of 5,000 or 10,000 read a spec of 30,000 records in p50 337–418 ms
 * a request, of 2,000 in 452–481 ms (the round trips), of 30,000 in 453–463 ms (nothing read
 * ahead). What a chunk holds: per record at most two refs of the project's calls (2 KiB each at
 * most) and a value of INLINE_PAYLOAD_BYTES (PostgreSQL measures a payload compressed), some
 * 25 MB at the bounds, two chunks at once on PostgreSQL (one read ahead).
 */
const RECORDS_PER_READ = 5_000;
/** Ids per statement when the long values of the latest records are read. */
const IDS_PER_READ = 500;

/** One spec's latest values, item by item: what a statistics thread computes on. */
export interface AgreementTask {
  level: AgreementLevel;
  annotators: string[];
  /** The JSON text of each distinct value. */
  texts: string[];
  /** Items in no order; the thread sorts them by creation time, then id. */
  itemIds: string[];
  itemCreatedMs: Float64Array<ArrayBuffer>;
  /** Item i's values are entries itemStarts[i] to itemStarts[i + 1] − 1. */
  itemStarts: Int32Array<ArrayBuffer>;
  /** Each value's annotator (an index into `annotators`) and text (an index into `texts`). */
  entryAnnotator: Int32Array<ArrayBuffer>;
  entryText: Int32Array<ArrayBuffer>;
}

/** A spec's task, and its items in the task's order (a disagreement names its item by that index). */
export type SpecTask = { task: AgreementTask; rated: LiveItem[] };

/** One spec's values in the queue's live items read (latestValues) and made its statistics task. */
export async function specTask(
  db: StatementReader,
  { queue, ...scope }: ValuesScope & { level: AgreementLevel; queue: { queueId: string; coverage: number } },
): Promise<SpecTask> {
  const latest = await latestValues(db, new QueueItems(db, queue), scope);
  const rated = [...latest.items.values()];
  return { task: latest.task(scope.level, rated), rated };
}

/** The statistics of a task with each disagreement's item and call named (the task knows items by index). */
export function withItems(statistics: AgreementStatistics, rated: readonly LiveItem[]): AgreementStatistics {
  const disagreements = statistics.disagreements.map((d) => {
    const item = rated[Number(d.item_id)]!;
    return { ...d, item_id: item.id, call_id: item.callId };
  });
  return { ...statistics, disagreements };
}

/** A live item of the queue: its id, its call's id, when it was added. */
export type LiveItem = { id: string; callId: string; createdMs: number };
/** A rated item and, per annotator index, the entry of that annotator's latest record (LatestValues). */
type LiveItemSlot = LiveItem & { latest: number[] };
/** A latest record as held: its item, its annotator, its entry. */
type HeldRecord = { slot: LiveItemSlot; user: string; entry: number };

/** Value texts LatestValues holds one copy of, at most (of at most SHARED_TEXT_CHARS each): labels and numbers. */
const SHARED_TEXTS = 10_000;
const SHARED_TEXT_CHARS = 256;

/**
 * Each annotator's latest record per item of one spec, as the records are read (in any order),
 * holding at most MAX_VALUES records and MAX_VALUES_CHARS of their values' JSON text. A latest
 * record is an entry in columns (time, id, value text, null while unread: a long payload), and
 * equal short texts are held once: no object per value for the garbage collector to copy and
 * promote, only its id and the texts that differ.
 */
class LatestValues {
  readonly annotators: string[] = [];
  readonly #annotatorIndex = new Map<string, number>();
  readonly items = new Map<string, LiveItemSlot>();
  #entryCreatedMs = new Float64Array(1024);
  readonly #entryId: string[] = [];
  readonly #entryText: (string | null)[] = [];
  /** At most SHARED_TEXTS texts, each the one copy held of its value (replaced values' texts included: hence the bound). */
  readonly #shared = new Map<string, string>();
  #chars = 0;
  readonly #specName: string;

  constructor(specName: string) {
    this.#specName = specName;
  }

  /** A record of `user` for the item; the later one of an annotator and item wins. */
  add(item: LiveItem, user: string, [, , , createdMs, id, text]: RecordRead): void {
    let annotator = this.#annotatorIndex.get(user);
    if (annotator === undefined) {
      this.#annotatorIndex.set(user, (annotator = this.annotators.length));
      this.annotators.push(user);
    }
    let slot = this.items.get(item.id);
    if (!slot) this.items.set(item.id, (slot = { ...item, latest: [] }));
    let entry = slot.latest[annotator];
    if (entry !== undefined) {
      const heldMs = this.#entryCreatedMs[entry]!;
      if (!(createdMs !== heldMs ? createdMs > heldMs : id > this.#entryId[entry]!)) return;
      this.#chars -= this.#entryText[entry]?.length ?? 0;
    } else {
      entry = this.#entryId.length;
      if (entry >= MAX_VALUES) throw tooManyValues(this.#specName);
      if (entry === this.#entryCreatedMs.length) {
        const grown = new Float64Array(entry * 2);
        grown.set(this.#entryCreatedMs);
        this.#entryCreatedMs = grown;
      }
      slot.latest[annotator] = entry;
    }
    this.#entryCreatedMs[entry] = createdMs;
    this.#entryId[entry] = id;
    this.#entryText[entry] = null;
    if (text !== null) this.#setText(slot, user, entry, text);
  }

  /** The feedback id of a latest record. */
  idOf({ entry }: HeldRecord): string {
    return this.#entryId[entry]!;
  }

  /** Sets the value text of a latest record, within the bounds. */
  setText({ slot, user, entry }: HeldRecord, text: string): void {
    this.#setText(slot, user, entry, text);
  }

  #setText(slot: LiveItemSlot, user: string, entry: number, text: string): void {
    if (text.length > MAX_VALUE_CHARS) throw valueTooLong({ specName: this.#specName, callId: slot.callId, user, chars: text.length });
    this.#chars += text.length;
    if (this.#chars > MAX_VALUES_CHARS) throw tooManyChars(this.#specName);
    let shared = text.length <= SHARED_TEXT_CHARS ? this.#shared.get(text) : text;
    if (shared === undefined) {
      shared = text;
      if (this.#shared.size < SHARED_TEXTS) this.#shared.set(text, text);
    }
    this.#entryText[entry] = shared;
  }

  /** The records whose value is still unread. */
  *unread(): Generator<HeldRecord> {
    for (const slot of this.items.values()) {
      for (const [annotator, entry] of slot.latest.entries()) if (entry !== undefined && this.#entryText[entry] === null) yield { slot, user: this.annotators[annotator]!, entry };
    }
  }

  /** The statistics task of these values, items in the order of `items`. */
  task(level: AgreementLevel, items: LiveItemSlot[]): AgreementTask {
    const textIndex = new Map<string, number>();
    const texts: string[] = [];
    const itemStarts = new Int32Array(items.length + 1);
    const entryAnnotator = new Int32Array(this.#entryId.length);
    const entryText = new Int32Array(this.#entryId.length);
    let next = 0;
    for (const [i, slot] of items.entries()) {
      itemStarts[i] = next;
      for (const [annotator, entry] of slot.latest.entries()) {
        // A record purged before its long value was read counts no more.
        const text = entry === undefined ? null : this.#entryText[entry]!;
        if (text === null) continue;
        let index = textIndex.get(text);
        if (index === undefined) {
          textIndex.set(text, (index = texts.length));
          texts.push(text);
        }
        entryAnnotator[next] = annotator;
        entryText[next++] = index;
      }
    }
    itemStarts[items.length] = next;
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
 * The records are read a chunk at a time; the items of a chunk's calls are looked up
 * (QueueItems), and its records are kept by item as they come (a record that reaches no item is
 * dropped at once).
 */
async function latestValues(db: StatementReader, items: QueueItems, scope: ValuesScope): Promise<LatestValues> {
  const { deadline } = scope;
  // The call id a ref names, cut out here: on PostgreSQL, substr and its comparison in the
  // statement cost 10 ms of the database's time per 30,000 records for each of the two refs. The
  // statement returns only the refs that name a call of the project (callRefsOnly).
  const prefix = scope.callRefPrefix;
  const prefixLength = [...prefix].length; // characters, as SQLite's substr counts them
  const records: RecordsSql = {
    callOf: (ref) => (ref !== null && ref.startsWith(prefix) ? ref.slice(prefix.length) : null),
    callRefsOnly: (column) =>
      db.dialect === 'postgresql'
        ? sql`case when starts_with(${sql.raw(column)}, ${prefix}) then ${sql.raw(column)} end`
        : sql`case when substr(${sql.raw(column)}, 1, ${sql.raw(String(prefixLength))}) = ${prefix} then ${sql.raw(column)} end`,
    where: sql`f.project_id = ${scope.projectId} and f.queue_id = ${scope.queueId} and f.feedback_type = ${`svc.annotation.${scope.specName}`} and f.annotation_ref = ${scope.ref}${
      scope.assignedOnly ? sql` and exists (select 1 from annotation_queue_assignees a where a.queue_id = ${scope.queueId} and a.user_id = f.svc_user_id)` : sql``
    }`,
  };
  const latest = new LatestValues(scope.specName);
  const keep = async (chunk: RecordRead[]) => {
    await items.lookUp(chunk, { deadline, callOf: records.callOf });
    for (const record of chunk) {
      const item = items.get(records.callOf(record[SVC_REF])) ?? items.get(records.callOf(record[CALL_REF]));
      if (item) latest.add(item, record[USER], record);
    }
  };
  if (db.dialect === 'postgresql') await recordsOnPostgres(db, scope, records, keep);
  else await recordsOnSqlite(db, scope, records, keep);

  // The latest records whose payload was too long to read in the scan: their values by id.
  const unread = [...latest.unread()];
  for (let start = 0; start < unread.length; start += IDS_PER_READ) {
    deadline.check();
    const part = unread.slice(start, start + IDS_PER_READ);
    const byId = new Map(part.map((held) => [latest.idOf(held), held]));
    for (const [id, chars, text] of await valuesById(db, scope.projectId, [...byId.keys()])) {
      const held = byId.get(id)!;
      if (text === null) throw valueTooLong({ specName: scope.specName, callId: held.slot.callId, user: held.user, chars });
      latest.setText(held, text);
    }
  }
  return latest;
}

export type ValuesScope = {
  projectId: string;
  queueId: string;
  specName: string;
  ref: string;
  /** `svc:///<project>/call/`: a ref that begins so names the call whose id follows. */
  callRefPrefix: string;
  deadline: AgreementDeadline;
  /** An assigned queue: only its assignees' values count. */
  assignedOnly: boolean;
};

/** Live items QueueItems reads of a queue in one pass, at most: beyond that it looks them up by call. */
export const QUEUE_READ_LIMIT = 20_000;
/** Items per statement when QueueItems reads the queue's items. */
const ITEMS_PER_READ = 10_000;
/** Call ids QueueItems holds at most when it looks items up by call, beyond which it starts afresh (a chunk's calls always fit). */
const MAX_KNOWN_CALLS = 2 * MAX_VALUES;

/**
 * The live items of the queue that its overlap covers (coverage.ts), by call id. The first
 * lookup reads all of them, in pages by call id, when there are at most QUEUE_READ_LIMIT: the
 * specs' records name most of a queue's items, and a statement per chunk of records that names
 * its calls made PostgreSQL read the whole queue each time (without statistics — autovacuum off
 * or not yet run — its planner serves `queue_id = … and call_id = any(…)` by another index on
 * queue_id, filtering every item). A larger queue has its items looked up by the calls of each
 * chunk of records, once per spec read while at most MAX_KNOWN_CALLS are known.
 */
class QueueItems {
  readonly #known = new Map<string, LiveItem | null>();
  /** Whether #known holds every item (a call not in it has none); undecided before the first lookup. */
  #complete: boolean | undefined;
  readonly #db: StatementReader;
  readonly #queue: { queueId: string; coverage: number };

  constructor(db: StatementReader, queue: { queueId: string; coverage: number }) {
    this.#db = db;
    this.#queue = queue;
  }

  /** Makes the items of the calls these records name known. */
  async lookUp(records: RecordRead[], { deadline, callOf }: { deadline: AgreementDeadline; callOf: RecordsSql['callOf'] }): Promise<void> {
    this.#complete ??= await this.#readAll(deadline);
    if (this.#complete) return;
    const unknownOf = () => {
      const unknown = new Set<string>();
      for (const record of records) {
        for (const callId of [callOf(record[SVC_REF]), callOf(record[CALL_REF])]) if (callId !== null && !this.#known.has(callId)) unknown.add(callId);
      }
      return unknown;
    };
    let unknown = unknownOf();
    if (!unknown.size) return;
    deadline.check();
    if (this.#known.size + unknown.size > MAX_KNOWN_CALLS) {
      this.#known.clear();
      unknown = unknownOf();
    }
    for (const callId of unknown) this.#known.set(callId, null);
    for (const [id, callId, createdMs] of await liveItems(this.#db, { ...this.#queue, callIds: [...unknown] })) this.#known.set(callId, { id, callId, createdMs });
  }

  /** Reads every item while there are at most QUEUE_READ_LIMIT; whether it did. */
  async #readAll(deadline: AgreementDeadline): Promise<boolean> {
    for (let after = ''; ; ) {
      deadline.check();
      const page = await liveItems(this.#db, { ...this.#queue, after, limit: ITEMS_PER_READ });
      for (const [id, callId, createdMs] of page) this.#known.set(callId, { id, callId, createdMs });
      if (this.#known.size > QUEUE_READ_LIMIT) {
        this.#known.clear();
        return false;
      }
      if (page.length < ITEMS_PER_READ) return true;
      after = page.at(-1)![1];
    }
  }

  /** The item of a call looked up, if it has one. */
  get(callId: string | null): LiveItem | undefined {
    return callId === null ? undefined : (this.#known.get(callId) ?? undefined);
  }
}

/** The statement that reads a spec's records: its filter, and the call id of a ref it reads (null for none of the project's calls). */
type RecordsSql = {
  callOf: (ref: string | null) => string | null;
  /** A ref column as read: the ref when it names a call of the project, else null (a chunk holds no other ref). */
  callRefsOnly: (column: string) => Statement;
  where: Statement;
};
/**
 * A record as read, a row of values (no object per row for the driver to build): its annotator,
 * its refs (RecordsSql's callOf tells the call each names), its time and id, its value's JSON
 * text (null while unread: a long payload), and on SQLite its rowid (where the next chunk starts).
 */
type RecordRead = [user: string, svcRef: string | null, callRef: string | null, createdMs: number, id: string, text: string | null, rowid?: number];
const USER = 0;
const SVC_REF = 1;
const CALL_REF = 2;
const ROWID = 6;

/**
 * PostgreSQL reads the spec's records through a cursor (in a read-only transaction),
 * RECORDS_PER_READ at a time, in the order it finds them (no sort: a window or `distinct on`
 * over annotator and refs made it sort every record, twice the cost of the read), and makes the
 * next chunk while `keep` takes one.
 */
async function recordsOnPostgres(db: StatementReader, scope: ValuesScope, records: RecordsSql, keep: (chunk: RecordRead[]) => Promise<void>): Promise<void> {
  // The columns in RecordRead's order. Times as epoch milliseconds in a float8, rounded (exact
  // below 2^53): no Date per row, and date_part's float8 where extract's numeric arithmetic took
  // 35 ms of the database's time per 30,000 records.
  await db.readOnly(async (tx) => {
    await tx.rows(
      sql`declare agreement_records no scroll cursor for
         select f.svc_user_id, ${records.callRefsOnly('f.svc_ref')}, ${records.callRefsOnly('f.call_ref')}, round(date_part('epoch', f.created_at) * 1000), f.id,
                case when pg_column_size(f.payload) <= ${INLINE_PAYLOAD_BYTES} then (f.payload -> 'value')::text end
           from feedback f
          where ${records.where}`,
    );
    const fetchNext = () => {
      const rows = tx.arrays(sql`fetch ${sql.raw(String(RECORDS_PER_READ))} from agreement_records`);
      rows.catch(() => undefined); // awaited below; a failure while the chunk before is kept is not unhandled
      return rows;
    };
    for (let next = fetchNext(); ; ) {
      scope.deadline.check();
      const rows = (await beforeDeadline(next, scope.deadline)) as RecordRead[];
      if (rows.length === RECORDS_PER_READ) next = fetchNext();
      await keep(rows);
      if (rows.length < RECORDS_PER_READ) break;
    }
  });
}

/**
 * SQLite reads the spec's records by feedback_queue_idx in chunks of RECORDS_PER_READ in rowid
 * order (a range of that index: no sort, which its synchronous driver would run in one piece),
 * each chunk's rows as arrays of values; on the event loop (agreement.ts's fallback), other work
 * runs between chunks.
 */
async function recordsOnSqlite(db: StatementReader, scope: ValuesScope, records: RecordsSql, keep: (chunk: RecordRead[]) => Promise<void>): Promise<void> {
  // The columns in RecordRead's order; created_at holds epoch milliseconds, the value comes as its JSON text.
  const chunkAfter = (after: number) =>
    sql`select f.svc_user_id, ${records.callRefsOnly('f.svc_ref')}, ${records.callRefsOnly('f.call_ref')}, f.created_at, f.id,
               case when octet_length(f.payload) <= ${INLINE_PAYLOAD_BYTES} then json(f.payload -> '$.value') end, f.rowid
          from feedback f
         where ${records.where} and f.rowid > ${after}
         order by f.rowid
         limit ${RECORDS_PER_READ}`;
  for (let after = 0; ; ) {
    scope.deadline.check();
    const rows = (await db.arrays(chunkAfter(after))) as RecordRead[];
    await keep(rows);
    if (rows.length < RECORDS_PER_READ) break;
    after = rows.at(-1)![ROWID]!;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * [id, call id, creation time in epoch milliseconds] of the live items of the queue that its
 * overlap covers: those of these calls, or a page of them by call id (call ids are never empty).
 */
async function liveItems(
  db: StatementReader,
  { queueId, coverage, ...which }: { queueId: string; coverage: number } & ({ callIds: string[] } | { after: string; limit: number }),
): Promise<[string, string, number][]> {
  const postgres = db.dialect === 'postgresql';
  const calls =
    'callIds' in which
      ? postgres
        ? sql`and call_id = any(${which.callIds})`
        : sql`and call_id in (${sql.list(which.callIds)})`
      : sql`and call_id > ${which.after} order by call_id limit ${which.limit}`;
  if (postgres) {
    type Row = { id: string; call_id: string; created_ms: number };
    const rows = await db.rows<Row>(
      sql`select id, call_id, round(date_part('epoch', created_at) * 1000) as created_ms
            from annotation_queue_items where queue_id = ${queueId} and deleted_at is null and coverage_point < ${coverage} ${calls}`,
    );
    return rows.map((row) => [row.id, row.call_id, row.created_ms]);
  }
  const rows = await db.arrays(sql`select id, call_id, created_at from annotation_queue_items where queue_id = ${queueId} and deleted_at is null and coverage_point < ${coverage} ${calls}`);
  return rows as [string, string, number][];
}

/** [id, characters of JSON, the value's JSON text when at most MAX_VALUE_CHARS] of these records. */
async function valuesById(db: StatementReader, projectId: string, ids: string[]): Promise<[string, number, string | null][]> {
  const valueOf = sql.raw(db.dialect === 'postgresql' ? `(payload -> 'value')::text` : `json(payload -> '$.value')`);
  const statement = sql`select id, length(value) as chars, case when length(value) <= ${MAX_VALUE_CHARS} then value end as value
                          from (select id, ${valueOf} as value from feedback where project_id = ${projectId} and id in (${sql.list(ids)})) v`;
  if (db.dialect === 'sqlite') return (await db.arrays(statement)) as [string, number, string | null][];
  type Row = { id: string; chars: number; value: string | null };
  return (await db.rows<Row>(statement)).map((row) => [row.id, row.chars, row.value]);
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
