import { parseRef, type CallFilter, type QueueRuleFilter, type RuleTrigger } from '@loupe/shared';
import { byText, inList, inLockOrder, jsonFromSql, onPostgres, sqlDate, sqlRows, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { lockQueuesForWrite } from './annotation-queues.ts';
import { callFilterConditions, jsonConditions } from './call-filter.ts';
import { queueEvent, type RecordEvent } from './queue-events.ts';
import { coveragePoint } from './coverage.ts';
import { isSampled } from './rule-sampling.ts';
import { newId } from './ids.ts';

// Queue rules at work (contract 5.10): which of the calls a write brings match which rules, and
// the items they add, in the transaction of that write. The filters are evaluated by the
// databases, with the calls query's own conditions (call-filter.ts), over the rows the write has
// just stored; the sample is a hash of (rule, call) (rule-sampling.ts).

const CHUNK = 500;
/** New calls whose flags one statement reads: a write's batch of 1,000 in one. */
const FLAG_CHUNK = 1000;

/** A live, enabled rule of a live queue, as the writers use it. */
export type ActiveRule = {
  id: string;
  projectId: string;
  queueId: string;
  trigger: RuleTrigger;
  filter: QueueRuleFilter;
  sampleRate: number;
  maxItemsPerDay: number | null;
  createdBy: string;
};

type ActiveRuleRow = {
  id: string;
  project_id: string;
  queue_id: string;
  trigger: RuleTrigger;
  filter: unknown;
  sample_rate: number | string;
  max_items_per_day: number | string | null;
  created_by: string;
};

export const ACTIVE_RULE_COLUMNS = sql`r.id, r.project_id, r.queue_id, r.trigger, r.filter, r.sample_rate, r.max_items_per_day, r.created_by`;

export function toActiveRule(row: ActiveRuleRow): ActiveRule {
  return {
    id: row.id,
    projectId: row.project_id,
    queueId: row.queue_id,
    trigger: row.trigger,
    filter: jsonFromSql<QueueRuleFilter>(row.filter),
    sampleRate: Number(row.sample_rate),
    maxItemsPerDay: row.max_items_per_day === null ? null : Number(row.max_items_per_day),
    createdBy: row.created_by,
  };
}

/** The live, enabled rules of these projects with this trigger, whose queue is live, in id order. */
async function activeRules(tx: SqlScope, { projectIds, trigger }: { projectIds: readonly string[]; trigger: RuleTrigger }): Promise<ActiveRule[]> {
  if (!projectIds.length) return [];
  const rows = await sqlRows<ActiveRuleRow>(tx,
    sql`select ${ACTIVE_RULE_COLUMNS} from queue_rules r
      where r.project_id in (${sql.list(projectIds)}) and r.trigger = ${trigger} and r.enabled and r.deleted_at is null
        and exists (select 1 from annotation_queues q where q.id = r.queue_id and q.deleted_at is null)
      order by r.id`);
  return rows.map(toActiveRule);
}

/** A call a rule matched: items copy its fields from the calls table themselves. */
export type MatchedCall = { id: string };

/**
 * One text column of '1' and '0', a character per filter: whether the row meets each. Columns
 * are the row's own (unqualified), as callFilterConditions writes them. A null (an unknown) is '0'.
 */
export function matchFlags(filters: readonly Statement[][]): Statement {
  const flags = filters.map((conditions) => (conditions.length ? sql`case when ${sql.join(conditions, ' and ')} then '1' else '0' end` : sql`'1'`));
  return sql.join(flags, ' || ');
}

/**
 * Most bound values of the filters of one statement: a filter may hold a few thousand (lists of
 * 1,000 ids or names), and a statement takes at most 32,766 on SQLite, 65,535 on PostgreSQL.
 */
const MAX_FILTER_PARAMS = 10_000;

/** The bound values of a filter's conditions. */
function paramsOf(conditions: readonly Statement[]): number {
  return conditions.reduce((sum, condition) => sum + condition.params.length, 0);
}

/**
 * For each filter, the rows that meet it. `read` runs a statement whose `flags` column is
 * matchFlags of the filters it is given: the filters go in groups whose values fit in one
 * statement, one read per group.
 */
async function rowsMeeting<R extends { id: string; flags: string }>(
  filters: readonly Statement[][],
  read: (flags: Statement) => Promise<R[]>,
): Promise<R[][]> {
  const met = filters.map((): R[] => []);
  let start = 0;
  while (start < filters.length) {
    let end = start;
    let params = 0;
    do params += paramsOf(filters[end]!);
    while (++end < filters.length && params + paramsOf(filters[end]!) <= MAX_FILTER_PARAMS);
    const group = filters.slice(start, end);
    for (const row of await read(matchFlags(group))) group.forEach((_, index) => row.flags[index] === '1' && met[start + index]!.push(row));
    start = end;
  }
  return met;
}

/** What one rule met in one write: how many records it looked at, and the distinct calls that matched. */
export type RuleMatches = { rule: ActiveRule; considered: number; matched: MatchedCall[] };

/** What a write adds to the rules' counts, and where its events go. */
export type RuleWrite = { now: Date; record: RecordEvent };

/**
 * Whether the matched calls are new, stored by this very transaction: then no queue has, or had,
 * an item of them (an item is made from a stored call, and calls are never deleted), and nothing
 * looks for one.
 */
type NewCalls = { newCalls?: boolean };

/**
 * The rules with trigger "call" of the projects a write of calls stores into, read before its
 * insert, with how the write learns which of its new calls meet which rule: one flags column
 * (matchFlags, each rule's conditions and its project), computed on the new rows themselves.
 *
 * - PostgreSQL: `returning` is that column for the insert's RETURNING (every condition of a call
 *   filter is on the row's own columns, so the stored row answers it as it is written). A read of
 *   the new calls afterwards (`project_id = ? and id in (…)`) was planned from the project's
 *   statistics: on a project grown since its last analyze, as a scan of all its calls (10–21 ms a
 *   batch at 15,000–30,000 calls, against 3 ms by the primary key).
 * - SQLite: `newRows` reads the column from the rows whose rowid is above the last one before the
 *   insert: the write's calls (a write holds the database alone; calls are never deleted, so rowids
 *   ascend), read in one range of the table rather than looked up one by one in the primary key (a
 *   text condition reads the text index from that rowid on too, see CallFilterOptions).
 *
 * `returning` and `newRows.flags` are null when the filters' values would crowd one statement's
 * parameters: the calls are then read by id, the filters in groups (rowsMeeting).
 */
export type CallRules = {
  rules: ActiveRule[];
  returning: Statement | null;
  newRows: { afterRowid: number; flags: Statement | null } | null;
};

export async function callRulesOf(tx: SqlScope, projectIds: readonly string[]): Promise<CallRules> {
  const rules = await activeRules(tx, { projectIds, trigger: 'call' });
  if (!rules.length) return { rules, returning: null, newRows: null };
  const afterRowid = onPostgres(tx) ? undefined : await lastCallRowid(tx);
  const filters = rules.map((rule) => [sql`project_id = ${rule.projectId}`, ...callFilterConditions(tx, rule.filter, { textAfterRowid: afterRowid })]);
  const params = filters.reduce((sum, conditions) => sum + paramsOf(conditions), 0);
  const flags = params <= MAX_FILTER_PARAMS ? matchFlags(filters) : null;
  return afterRowid === undefined ? { rules, returning: flags, newRows: null } : { rules, returning: null, newRows: { afterRowid, flags } };
}

/** SQLite: the last rowid of `calls` (0 when empty). */
async function lastCallRowid(tx: SqlScope): Promise<number> {
  const [last] = await sqlRows<{ last: number | null }>(tx, sql`select max(rowid) as last from calls`);
  return Number(last?.last ?? 0);
}

/** A call a write stored; `flags` when its insert returned CallRules' `returning`. */
export type StoredCall = { projectId: string; id: string; flags?: string };

/** Newly stored calls: the rules (callRulesOf) of their projects add the matching, sampled ones. */
export async function addCallRuleItems(tx: SqlScope, { calls, rules: callRules, now, record }: RuleWrite & { calls: readonly StoredCall[]; rules: CallRules }): Promise<void> {
  const { rules, newRows } = callRules;
  if (!rules.length || !calls.length) return;
  const flagged = newRows?.flags ? await withNewRowFlags(tx, { calls, afterRowid: newRows.afterRowid, flags: newRows.flags }) : calls;
  const byProject = Map.groupBy(flagged, (call) => call.projectId);
  const results: RuleMatches[] = [];
  const returned = flagged.every((call) => call.flags !== undefined);
  for (const [projectId, projectCalls] of byProject) {
    const projectRules = rules.filter((rule) => rule.projectId === projectId);
    if (!projectRules.length) continue;
    if (returned) {
      // The flags cover every rule of the write, in `rules`' order.
      for (const rule of projectRules) {
        const at = rules.indexOf(rule);
        results.push({ rule, considered: projectCalls.length, matched: projectCalls.filter((call) => call.flags![at] === '1').map((call) => ({ id: call.id })) });
      }
      continue;
    }
    const matched = projectRules.map((): MatchedCall[] => []);
    const filters = projectRules.map((rule) => callFilterConditions(tx, rule.filter, { textAfterRowid: newRows?.afterRowid }));
    for (let i = 0; i < projectCalls.length; i += FLAG_CHUNK) {
      const ids = projectCalls.slice(i, i + FLAG_CHUNK).map((call) => call.id);
      const met = await rowsMeeting(filters, (flags) =>
        sqlRows<MatchedCall & { flags: string }>(tx, sql`select id, ${flags} as flags from calls where project_id = ${projectId} and id in (${sql.list(ids)})`));
      met.forEach((rows, index) => matched[index]!.push(...rows));
    }
    projectRules.forEach((rule, index) => results.push({ rule, considered: projectCalls.length, matched: matched[index]! }));
  }
  await addRuleItems(tx, { results, now, record, newCalls: true });
}

/** SQLite: the write's calls with their flags, read from the rows after `afterRowid` (see CallRules). */
async function withNewRowFlags(tx: SqlScope, { calls, afterRowid, flags }: { calls: readonly StoredCall[]; afterRowid: number; flags: Statement }): Promise<StoredCall[]> {
  const rows = await sqlRows<{ project_id: string; id: string; flags: string }>(tx, sql`select project_id, id, ${flags} as flags from calls where rowid > ${afterRowid}`);
  const read = new Map(rows.map((row) => [`${row.project_id}\u0000${row.id}`, row.flags]));
  return calls.map((call) => ({ ...call, flags: read.get(`${call.projectId}\u0000${call.id}`) }));
}

/** The call a feedback record names: its call_ref, else its svc_ref when that is a call ref. */
function namedCall(callRef: string | null, svcRef: string): string | null {
  for (const ref of [callRef, svcRef]) {
    if (ref === null) continue;
    const parsed = parseRef(ref);
    if (parsed.ok && parsed.ref.kind === 'call') return parsed.ref.callId;
  }
  return null;
}

/** The conditions of a feedback rule on the record itself (its type and payload), on `feedback`'s own columns. */
function feedbackConditions(tx: SqlScope, filter: QueueRuleFilter): Statement[] {
  return [...inList('feedback_type', filter.feedback_types), ...jsonConditions(tx, 'payload', filter.payload)];
}

/**
 * Newly stored feedback records: the rules with trigger "feedback" of their projects add the
 * calls that matching records name (when stored, and matching the rule's `call` conditions).
 */
export async function addFeedbackRuleItems(
  tx: SqlScope,
  { feedback, now, record }: RuleWrite & { feedback: readonly { projectId: string; id: string }[] },
): Promise<void> {
  const byProject = Map.groupBy(feedback, (element) => element.projectId);
  const rules = await activeRules(tx, { projectIds: [...byProject.keys()], trigger: 'feedback' });
  if (!rules.length) return;
  const results: RuleMatches[] = [];
  for (const [projectId, records] of byProject) {
    const projectRules = rules.filter((rule) => rule.projectId === projectId);
    if (!projectRules.length) continue;
    // The calls each rule's matching records name.
    const named = projectRules.map(() => new Set<string>());
    const recordFilters = projectRules.map((rule) => feedbackConditions(tx, rule.filter));
    for (let i = 0; i < records.length; i += CHUNK) {
      const ids = records.slice(i, i + CHUNK).map((element) => element.id);
      const met = await rowsMeeting(recordFilters, (flags) =>
        sqlRows<{ id: string; call_ref: string | null; svc_ref: string; flags: string }>(tx,
          sql`select id, call_ref, svc_ref, ${flags} as flags from feedback where project_id = ${projectId} and id in (${sql.list(ids)})`));
      met.forEach((rows, index) => {
        for (const row of rows) {
          const callId = namedCall(row.call_ref, row.svc_ref);
          if (callId !== null) named[index]!.add(callId);
        }
      });
    }
    const matched = await callsMatching(tx, { projectId, named, filters: projectRules.map((rule) => rule.filter.call ?? {}) });
    projectRules.forEach((rule, index) => results.push({ rule, considered: records.length, matched: matched[index]! }));
  }
  await addRuleItems(tx, { results, now, record });
}

/** Of the calls named for each filter, the stored ones that meet it. */
async function callsMatching(
  tx: SqlScope,
  { projectId, named, filters }: { projectId: string; named: readonly Set<string>[]; filters: readonly CallFilter[] },
): Promise<MatchedCall[][]> {
  const matched = filters.map((): MatchedCall[] => []);
  const all = [...new Set(named.flatMap((ids) => [...ids]))];
  const conditions = filters.map((filter) => callFilterConditions(tx, filter));
  for (let i = 0; i < all.length; i += CHUNK) {
    const ids = all.slice(i, i + CHUNK);
    const met = await rowsMeeting(conditions, (flags) =>
      sqlRows<MatchedCall & { flags: string }>(tx, sql`select id, ${flags} as flags from calls where project_id = ${projectId} and id in (${sql.list(ids)})`));
    met.forEach((rows, index) => matched[index]!.push(...rows.filter((row) => named[index]!.has(row.id))));
  }
  return matched;
}

/** What each rule did in a write. */
export type RuleOutcome = { considered: number; matched: number; sampledOut: number; capped: number; added: number };

/**
 * The items the rules' matches add, with every rule's counts of the day: sampled, not in the queue
 * before (a deleted item counts: a rule never adds a call again), under the daily cap, into live
 * queues. Locks, in one order for every writer: the queues' write locks (shared), then the day rows
 * of the rules with a cap (shard 0), in rule id order, before their room is read (PostgreSQL row
 * locks held to the commit: two concurrent writes never pass a cap together), then, last, the
 * other rules' day rows, in the shard this write picked. A rule without a cap reads nothing of its
 * day, so its row is written only at the end of the write, and concurrent writes wait for each
 * other's commits there only when they picked the same shard (one in DAY_SHARDS).
 */
export async function addRuleItems(
  tx: SqlScope,
  { results, now, record, newCalls = false }: RuleWrite & NewCalls & { results: readonly RuleMatches[] },
): Promise<Map<string, RuleOutcome>> {
  const ordered = [...results].sort((a, b) => (a.rule.id < b.rule.id ? -1 : a.rule.id > b.rule.id ? 1 : 0));
  const outcomes = new Map<string, RuleOutcome>();
  if (!ordered.length) return outcomes;
  const sampled = ordered.map(({ rule, matched }) => matched.filter((call) => isSampled(rule.id, call.id, rule.sampleRate)));
  for (const [index, { rule, considered, matched }] of ordered.entries()) {
    outcomes.set(rule.id, { considered, matched: matched.length, sampledOut: matched.length - sampled[index]!.length, capped: 0, added: 0 });
  }
  const queueIds = [...new Set(ordered.filter((_, index) => sampled[index]!.length).map(({ rule }) => rule.queueId))];
  await lockQueuesForWrite(tx, queueIds);
  const liveQueues = new Set(
    queueIds.length
      ? (await sqlRows<{ id: string }>(tx, sql`select id from annotation_queues where id in (${sql.list(queueIds)}) and deleted_at is null`)).map((row) => row.id)
      : [],
  );
  const day = now.toISOString().slice(0, 10);
  const at = sqlDate(tx, now);
  const capped = ordered.filter(({ rule }) => rule.maxItemsPerDay !== null);
  // The capped rules' counts go in first: the statement that locks their rows answers their room.
  const addedToday = capped.length ? await countCapped(tx, { day, at, rows: capped.map(({ rule }) => ({ ruleId: rule.id, shard: CAPPED_SHARD, ...outcomes.get(rule.id)! })) }) : new Map<string, number>();
  const wanted: { rule: ActiveRule; callIds: string[] }[] = [];
  for (const [index, { rule }] of ordered.entries()) {
    const outcome = outcomes.get(rule.id)!;
    let callIds = sampled[index]!.map((call) => call.id);
    if (!callIds.length || !liveQueues.has(rule.queueId)) continue;
    if (rule.maxItemsPerDay !== null) {
      // The cap leaves room for so many: which ones is decided among the calls not in the queue yet.
      const fresh = newCalls ? callIds : await neverInQueue(tx, rule.queueId, callIds);
      const room = Math.max(0, rule.maxItemsPerDay - (addedToday.get(rule.id) ?? 0));
      callIds = fresh.slice(0, room);
      outcome.capped = fresh.length - callIds.length;
    }
    wanted.push({ rule, callIds });
  }
  for (const [ruleId, itemIds] of await insertItems(tx, { wanted, at, newCalls })) {
    outcomes.get(ruleId)!.added = itemIds.length;
    const { rule } = ordered.find((result) => result.rule.id === ruleId)!;
    // One event per rule that added items: live streams refetch the queue's items (as after an add
    // by hand), webhooks get the ids and the rule (contract 5.13).
    record(queueEvent('items_added', { projectId: rule.projectId, queueId: rule.queueId }), {
      type: 'annotation_queue.items.added',
      data: { project_id: rule.projectId, queue_id: rule.queueId, item_ids: itemIds, rule_id: rule.id },
    });
  }
  // Last: every uncapped rule's counts, in this write's shard, and what the capped ones capped and added.
  const shard = 1 + Math.floor(Math.random() * DAY_SHARDS);
  const rows = ordered.flatMap(({ rule }) => {
    const outcome = outcomes.get(rule.id)!;
    if (rule.maxItemsPerDay === null) return [{ ruleId: rule.id, shard, ...outcome }];
    return outcome.capped || outcome.added ? [{ ruleId: rule.id, shard: CAPPED_SHARD, considered: 0, matched: 0, sampledOut: 0, capped: outcome.capped, added: outcome.added }] : [];
  });
  if (rows.length) await countDay(tx, { day, at, rows });
  return outcomes;
}

/**
 * Day rows of uncapped rules a write counts in, beside row 0 of the capped ones: concurrent writes
 * to rules without a cap wait on one row only when they picked the same of these.
 */
const DAY_SHARDS = 8;
/** The day row a capped rule counts in, locked while its room is read. */
const CAPPED_SHARD = 0;

/** A write's counts for one rule, and the shard of its day they go in. */
type DayCounts = { ruleId: string; shard: number } & RuleOutcome;

/**
 * Adds a write's counts to the rules' rows of the day (made when missing), locking them in rule
 * id order; answers what each rule has added that day in the rows written, this write's `added`
 * included.
 */
async function countDay(tx: SqlScope, { day, at, rows }: { day: string; at: unknown; rows: readonly DayCounts[] }): Promise<Map<string, number>> {
  const values = rows.map((row) =>
    sql`(${row.ruleId}, ${day}, ${row.shard}, ${row.considered}, ${row.matched}, ${row.sampledOut}, ${row.capped}, ${row.added}, ${row.added ? at : null})`);
  const days = await sqlRows<{ rule_id: string; added: number | string }>(tx,
    sql`insert into queue_rule_days (rule_id, day, shard, considered, matched, sampled_out, capped, added, last_added_at) values ${sql.join(values, ', ')}
      on conflict (rule_id, day, shard) do update set considered = queue_rule_days.considered + excluded.considered,
        matched = queue_rule_days.matched + excluded.matched, sampled_out = queue_rule_days.sampled_out + excluded.sampled_out,
        capped = queue_rule_days.capped + excluded.capped, added = queue_rule_days.added + excluded.added,
        last_added_at = coalesce(excluded.last_added_at, queue_rule_days.last_added_at)
      returning rule_id, added`);
  return new Map(days.map((row) => [row.rule_id, Number(row.added)]));
}

/**
 * Counts the capped rules' write in their CAPPED_SHARD row, locking it, and answers what each has
 * added that day: that row, and the other shards, which hold what it added before it had a cap.
 */
async function countCapped(tx: SqlScope, { day, at, rows }: { day: string; at: unknown; rows: readonly DayCounts[] }): Promise<Map<string, number>> {
  const added = await countDay(tx, { day, at, rows });
  const earlier = await sqlRows<{ rule_id: string; added: number | string }>(tx,
    sql`select rule_id, sum(added) as added from queue_rule_days
      where rule_id in (${sql.list(rows.map((row) => row.ruleId))}) and day = ${day} and shard <> ${CAPPED_SHARD} group by rule_id`);
  for (const row of earlier) added.set(row.rule_id, (added.get(row.rule_id) ?? 0) + Number(row.added));
  return added;
}

/** No item of the call in the queue, live or deleted, each kind through its own partial index. Columns are the code's own. */
function neverInQueueTerm(queue: string, call: string): Statement {
  const [queueId, callId] = [sql.raw(queue), sql.raw(call)];
  return sql`not exists (select 1 from annotation_queue_items i where i.queue_id = ${queueId} and i.call_id = ${callId} and i.deleted_at is null)
    and not exists (select 1 from annotation_queue_items i where i.queue_id = ${queueId} and i.call_id = ${callId} and i.deleted_at is not null)`;
}

/** The calls that have never had an item in the queue (deleted items count), in the order given. */
async function neverInQueue(tx: SqlScope, queueId: string, callIds: readonly string[]): Promise<string[]> {
  const known = new Set<string>();
  for (let i = 0; i < callIds.length; i += CHUNK) {
    const ids = callIds.slice(i, i + CHUNK);
    const rows = await sqlRows<{ call_id: string }>(tx,
      sql`select call_id from annotation_queue_items where queue_id = ${queueId} and call_id in (${sql.list(ids)}) and deleted_at is null
        union all select call_id from annotation_queue_items where queue_id = ${queueId} and call_id in (${sql.list(ids)}) and deleted_at is not null`);
    for (const row of rows) known.add(row.call_id);
  }
  return callIds.filter((id) => !known.has(id));
}

/** An item a rule adds: the rule, the call, the new item's id. */
type ItemRow = { rule: ActiveRule; callId: string; itemId: string };

const byQueueThenCall = (a: ItemRow, b: ItemRow): number => byText(a.rule.queueId, b.rule.queueId) || byText(a.callId, b.callId);

/** The rows of an items insert's `v`: each item's id, call, rule, queue, project, adding user and coverage point. */
const ITEM_ROW = 'item_id text, call_id text, rule_id text, queue_id text, project_id text, user_id text, coverage_point float8';
/** SQLite: a chunk's VALUES is padded with rows of nulls (which join no call) to one of these sizes, so that its text, prepared once, is reused. */
const SQLITE_ROW_COUNTS = [8, 64, CHUNK];

/**
 * A chunk of items as the insert's `v`. PostgreSQL reads one JSON document (jsonb_to_recordset):
 * a short statement whatever the chunk's size, one parameter instead of seven a row. SQLite gets
 * a multi-row VALUES of a padded size (SQLITE_ROW_COUNTS).
 */
function itemRows(tx: SqlScope, chunk: readonly ItemRow[]): Statement {
  if (onPostgres(tx)) {
    const rows = chunk.map(({ rule, callId, itemId }) => {
      return { item_id: itemId, call_id: callId, rule_id: rule.id, queue_id: rule.queueId, project_id: rule.projectId, user_id: rule.createdBy, coverage_point: coveragePoint(itemId) };
    });
    return sql`select * from jsonb_to_recordset(${Buffer.from(JSON.stringify(rows))}::text::jsonb) as r(${sql.raw(ITEM_ROW)})`;
  }
  const size = SQLITE_ROW_COUNTS.find((count) => count >= chunk.length)!;
  const params: unknown[] = [];
  for (const { rule, callId, itemId } of chunk) {
    params.push(itemId, callId, rule.id, rule.queueId, rule.projectId, rule.createdBy, coveragePoint(itemId));
  }
  for (let padding = chunk.length; padding < size; padding++) params.push(null, null, null, null, null, null, null);
  return sql.rows(params, 7, { before: 'values ' });
}

/**
 * Items for the calls each rule wants, all rules in one statement (per 500 items), their fields
 * copied from the calls by the database; unless the calls are new (NewCalls), a call that has, or
 * had, an item in the queue (a concurrent add among them, or another rule's of this write) is left
 * out. Answers the ids of the items each rule added, for those that added any.
 */
async function insertItems(
  tx: SqlScope,
  { wanted, at, newCalls }: { wanted: readonly { rule: ActiveRule; callIds: readonly string[] }[]; at: unknown; newCalls: boolean },
): Promise<Map<string, string[]>> {
  const added = new Map<string, string[]>();
  // Item ids (which order the queue) follow the write's order of calls.
  const made = wanted.flatMap(({ rule, callIds }) => callIds.map((callId): ItemRow => ({ rule, callId, itemId: newId() })));
  // Calls that another write may be adding to the same queue go in (queue, call) order on
  // PostgreSQL (inLockOrder), the order of the unique index (queue_id, call_id): two writes of the
  // same calls in other orders would otherwise each wait for the other's uncommitted entry. New
  // calls are this write's alone.
  const rows = newCalls ? made : inLockOrder(tx, made, byQueueThenCall);
  const [time, display] = onPostgres(tx) ? [sql`${at}::timestamptz`, sql`'[]'::jsonb`] : [sql`${at}`, sql`'[]'`];
  const unseen = newCalls ? sql`` : sql` and ${neverInQueueTerm('v.queue_id', 'v.call_id')}`;
  for (let i = 0; i < rows.length; i += CHUNK) {
    // A cross join: SQLite then reads the rows first and finds each call by its key (an inner join
    // let it scan the project's calls); PostgreSQL plans it as any join. The items are looked for
    // by the row's call_id, not the call's id (equal by the join): PostgreSQL then seeks the
    // (queue_id, call_id) index by both columns, where with c.id (text of the default collation,
    // call_id's is "C") it sought by call_id alone, reading the whole index for each call (0.6–0.9
    // ms a call at 10,000 items, growing with the queue).
    const inserted = await sqlRows<{ id: string; rule_id: string }>(tx,
      sql`with v (item_id, call_id, rule_id, queue_id, project_id, user_id, coverage_point) as (${itemRows(tx, rows.slice(i, i + CHUNK))})
        insert into annotation_queue_items (id, project_id, queue_id, call_id, call_started_at, call_ended_at, call_op_name,
          call_trace_id, display_fields, added_by, rule_id, created_at, created_by, updated_at, coverage_point)
        select v.item_id, c.project_id, v.queue_id, c.id, c.started_at, c.ended_at, c.op_name, c.trace_id, ${display}, v.user_id, v.rule_id, ${time}, v.user_id, ${time}, v.coverage_point
          from v cross join calls c
         where c.project_id = v.project_id and c.id = v.call_id${unseen}
        on conflict (queue_id, call_id) where deleted_at is null do nothing
        returning id, rule_id`);
    for (const row of inserted) {
      const ids = added.get(row.rule_id);
      if (ids) ids.push(row.id);
      else added.set(row.rule_id, [row.id]);
    }
  }
  // Back in the order they were made (UUIDv7 text sorts so).
  if (rows !== made) for (const ids of added.values()) ids.sort();
  return added;
}
