import { parseRef, type CallFilter, type QueueRuleFilter, type RuleTrigger } from '@loupe/shared';
import { inList, jsonFromSql, onPostgres, sqlDate, sqlRows, sqlRun, type SqlScope } from '../db/sql.ts';
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

/** A call's fields an item copies, as the driver gives them (written back as they came). */
export type CallFields = { id: string; trace_id: string; op_name: string; started_at: unknown; ended_at: unknown };
const CALL_FIELDS = sql`id, trace_id, op_name, started_at, ended_at`;

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
    do params += filters[end]!.reduce((sum, condition) => sum + condition.params.length, 0);
    while (++end < filters.length && params + filters[end]!.reduce((sum, condition) => sum + condition.params.length, 0) <= MAX_FILTER_PARAMS);
    const group = filters.slice(start, end);
    for (const row of await read(matchFlags(group))) group.forEach((_, index) => row.flags[index] === '1' && met[start + index]!.push(row));
    start = end;
  }
  return met;
}

/** What one rule met in one write: how many records it looked at, and the distinct calls that matched. */
export type RuleMatches = { rule: ActiveRule; considered: number; matched: CallFields[] };

/** What a write adds to the rules' counts, and where its events go. */
export type RuleWrite = { now: Date; record: RecordEvent };

/** Newly stored calls: the rules with trigger "call" of their projects add the matching, sampled ones. */
export async function addCallRuleItems(tx: SqlScope, { calls, now, record }: RuleWrite & { calls: readonly { projectId: string; id: string }[] }): Promise<void> {
  const byProject = groupBy(calls, (call) => call.projectId);
  const rules = await activeRules(tx, { projectIds: [...byProject.keys()], trigger: 'call' });
  if (!rules.length) return;
  const results: RuleMatches[] = [];
  const textAfterRowid = await newTextRows(tx, { rules, newCalls: calls.length });
  for (const [projectId, projectCalls] of byProject) {
    const projectRules = rules.filter((rule) => rule.projectId === projectId);
    if (!projectRules.length) continue;
    const matched = projectRules.map((): CallFields[] => []);
    const filters = projectRules.map((rule) => callFilterConditions(tx, rule.filter, { textAfterRowid }));
    for (let i = 0; i < projectCalls.length; i += CHUNK) {
      const ids = projectCalls.slice(i, i + CHUNK).map((call) => call.id);
      const met = await rowsMeeting(filters, (flags) =>
        sqlRows<CallFields & { flags: string }>(tx, sql`select ${CALL_FIELDS}, ${flags} as flags from calls where project_id = ${projectId} and id in (${sql.list(ids)})`));
      met.forEach((rows, index) => matched[index]!.push(...rows));
    }
    projectRules.forEach((rule, index) => results.push({ rule, considered: projectCalls.length, matched: matched[index]! }));
  }
  await addRuleItems(tx, { results, now, record });
}

/**
 * SQLite: where the rowids of the calls just stored begin (see CallFilterOptions), when a rule
 * searches text: `calls_text` keys each call's text by the call's rowid, and the write's calls are
 * the last rows of `calls` (a write holds the database alone; calls are never deleted, so rowids
 * ascend).
 */
async function newTextRows(tx: SqlScope, { rules, newCalls }: { rules: readonly ActiveRule[]; newCalls: number }): Promise<number | undefined> {
  if (onPostgres(tx) || !rules.some((rule) => rule.filter.text !== undefined)) return undefined;
  const [last] = await sqlRows<{ last: number | null }>(tx, sql`select max(rowid) as last from calls`);
  return Number(last?.last ?? 0) - newCalls;
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
  const byProject = groupBy(feedback, (element) => element.projectId);
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
): Promise<CallFields[][]> {
  const matched = filters.map((): CallFields[] => []);
  const all = [...new Set(named.flatMap((ids) => [...ids]))];
  const conditions = filters.map((filter) => callFilterConditions(tx, filter));
  for (let i = 0; i < all.length; i += CHUNK) {
    const ids = all.slice(i, i + CHUNK);
    const met = await rowsMeeting(conditions, (flags) =>
      sqlRows<CallFields & { flags: string }>(tx, sql`select ${CALL_FIELDS}, ${flags} as flags from calls where project_id = ${projectId} and id in (${sql.list(ids)})`));
    met.forEach((rows, index) => matched[index]!.push(...rows.filter((row) => named[index]!.has(row.id))));
  }
  return matched;
}

/** What each rule did in a write. */
export type RuleOutcome = { considered: number; matched: number; sampledOut: number; capped: number; added: number };

/**
 * The items the rules' matches add, with every rule's counts of the day: sampled, not in the queue
 * before (a deleted item counts: a rule never adds a call again), under the daily cap, into live
 * queues. Locks, in one order for every writer: the queues' write locks (shared), then the rules'
 * day rows in rule id order (PostgreSQL row locks held to the commit: two concurrent writes never
 * pass a cap together).
 */
export async function addRuleItems(
  tx: SqlScope,
  { results, now, record }: RuleWrite & { results: readonly RuleMatches[] },
): Promise<Map<string, RuleOutcome>> {
  const ordered = [...results].sort((a, b) => (a.rule.id < b.rule.id ? -1 : a.rule.id > b.rule.id ? 1 : 0));
  const outcomes = new Map<string, RuleOutcome>();
  if (!ordered.length) return outcomes;
  const sampled = ordered.map(({ rule, matched }) => matched.filter((call) => isSampled(rule.id, call.id, rule.sampleRate)));
  const queueIds = [...new Set(ordered.filter((_, index) => sampled[index]!.length).map(({ rule }) => rule.queueId))];
  await lockQueuesForWrite(tx, queueIds);
  const liveQueues = new Set(
    queueIds.length
      ? (await sqlRows<{ id: string }>(tx, sql`select id from annotation_queues where id in (${sql.list(queueIds)}) and deleted_at is null`)).map((row) => row.id)
      : [],
  );
  const day = now.toISOString().slice(0, 10);
  const at = sqlDate(tx, now);
  const counted = ordered.map(({ rule, considered, matched }, index) => {
    return sql`(${rule.id}, ${day}, ${considered}, ${matched.length}, ${matched.length - sampled[index]!.length}, 0, 0, null)`;
  });
  const days = await sqlRows<{ rule_id: string; added: number | string }>(tx,
    sql`insert into queue_rule_days (rule_id, day, considered, matched, sampled_out, capped, added, last_added_at) values ${sql.join(counted, ', ')}
      on conflict (rule_id, day) do update set considered = queue_rule_days.considered + excluded.considered,
        matched = queue_rule_days.matched + excluded.matched, sampled_out = queue_rule_days.sampled_out + excluded.sampled_out
      returning rule_id, added`);
  const addedToday = new Map(days.map((row) => [row.rule_id, Number(row.added)]));
  for (const [index, { rule, considered, matched }] of ordered.entries()) {
    const outcome: RuleOutcome = { considered, matched: matched.length, sampledOut: matched.length - sampled[index]!.length, capped: 0, added: 0 };
    outcomes.set(rule.id, outcome);
    const calls = sampled[index]!;
    if (!calls.length || !liveQueues.has(rule.queueId)) continue;
    const fresh = await neverInQueue(tx, rule.queueId, calls);
    const room = rule.maxItemsPerDay === null ? fresh.length : Math.max(0, rule.maxItemsPerDay - (addedToday.get(rule.id) ?? 0));
    const taken = fresh.slice(0, room);
    outcome.capped = fresh.length - taken.length;
    const itemIds = await insertItems(tx, { rule, calls: taken, at });
    outcome.added = itemIds.length;
    if (!outcome.added && !outcome.capped) continue;
    await sqlRun(tx, updateDay({ ruleId: rule.id, day, outcome, at }));
    // One event per rule that added items: live streams refetch the queue's items (as after an add
    // by hand), webhooks get the ids and the rule (contract 5.13).
    if (itemIds.length) {
      const place = { projectId: rule.projectId, queueId: rule.queueId };
      record(queueEvent('items_added', place), {
        type: 'annotation_queue.items.added',
        data: { project_id: rule.projectId, queue_id: rule.queueId, item_ids: itemIds, rule_id: rule.id },
      });
    }
  }
  return outcomes;
}

/** A rule's capped and added of a write, on its day row (locked by then). */
function updateDay({ ruleId, day, outcome, at }: { ruleId: string; day: string; outcome: RuleOutcome; at: unknown }): Statement {
  const lastAdded = outcome.added ? sql`${at}` : sql`last_added_at`;
  return sql`update queue_rule_days set capped = capped + ${outcome.capped}, added = added + ${outcome.added}, last_added_at = ${lastAdded}
    where rule_id = ${ruleId} and day = ${day}`;
}

/** The calls that have never had an item in the queue (deleted items count), in the order given. */
async function neverInQueue(tx: SqlScope, queueId: string, calls: readonly CallFields[]): Promise<CallFields[]> {
  const known = new Set<string>();
  for (let i = 0; i < calls.length; i += CHUNK) {
    const ids = calls.slice(i, i + CHUNK).map((call) => call.id);
    const rows = await sqlRows<{ call_id: string }>(tx, sql`select call_id from annotation_queue_items where queue_id = ${queueId} and call_id in (${sql.list(ids)})`);
    for (const row of rows) known.add(row.call_id);
  }
  return calls.filter((call) => !known.has(call.id));
}

/** Items of the rule for these calls; a call a concurrent add put in the queue meanwhile is left out. Returns how many were added. */
/** Inserts the rule's items for these calls, none twice in the queue; returns the new items' ids. */
async function insertItems(tx: SqlScope, { rule, calls, at }: { rule: ActiveRule; calls: readonly CallFields[]; at: unknown }): Promise<string[]> {
  const added: string[] = [];
  for (let i = 0; i < calls.length; i += CHUNK) {
    const rows = calls.slice(i, i + CHUNK).map((call) => {
      const itemId = newId();
      const values = [itemId, rule.projectId, rule.queueId, call.id, call.started_at, call.ended_at ?? null, call.op_name, call.trace_id, '[]', rule.createdBy, rule.id, at, rule.createdBy, at, coveragePoint(itemId)];
      return sql`(${sql.list(values)})`;
    });
    const inserted = await sqlRows<{ id: string }>(tx,
      sql`insert into annotation_queue_items (id, project_id, queue_id, call_id, call_started_at, call_ended_at, call_op_name,
         call_trace_id, display_fields, added_by, rule_id, created_at, created_by, updated_at, coverage_point)
       values ${sql.join(rows, ', ')}
       on conflict (queue_id, call_id) where deleted_at is null do nothing
       returning id`);
    for (const row of inserted) added.push(row.id);
  }
  return added;
}

function groupBy<T>(values: readonly T[], key: (value: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const value of values) {
    const group = groups.get(key(value));
    if (group) group.push(value);
    else groups.set(key(value), [value]);
  }
  return groups;
}
