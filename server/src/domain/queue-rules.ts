import {
  describeFilterProblem,
  ruleFilterProblem,
  type QueueRule,
  type QueueRuleCreateReq,
  type QueueRuleFilter,
  type QueueRulePreviewReq,
  type QueueRulePreviewRes,
  type QueueRuleUpdateReq,
} from '@loupe/shared';
import type { Selectable } from 'kysely';
import { QueueRuleRecord, type LoupeDatabase } from '../db/entities.ts';
import type { Em } from '../db/orm.ts';
import { isoOrNullFromSql, onPostgres, perDialect, storedBytes, sqlDate, sqlRows, sqlRun, sqlTransaction, typedKysely, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { ensureProject } from './access.ts';
import { liveQueue } from './annotation-queues.ts';
import { callFilterConditions } from './call-filter.ts';
import { requireAnswerFits } from './answer-budget.ts';
import { invalid, notFound } from './errors.ts';
import { newId } from './ids.ts';

// Queue rules (contract 5.10): create, list, change, delete, and preview a filter over the stored
// calls. What rules do to writes is in rule-items.ts; their backfills in rule-backfill.ts.

/** How many rules a queue and a project may hold (LOUPE_MAX_RULES_PER_QUEUE, _PER_PROJECT). */
export type RuleLimits = { perQueue: number; perProject: number };

type RuleRow = Selectable<LoupeDatabase['queue_rules']>;
type StatsRow = { rule_id: string; considered: number | string; matched: number | string; sampled_out: number | string; capped: number | string; added: number | string; last_added_at: unknown };

const NO_STATS = { considered: 0, matched: 0, sampled_out: 0, capped: 0, added: 0, last_added_at: null };

function toRuleDto(row: RuleRow, stats: StatsRow | undefined): QueueRule {
  return {
    id: row.id,
    queue_id: row.queue_id,
    name: row.name,
    trigger: row.trigger as QueueRule['trigger'],
    filter: row.filter as QueueRuleFilter,
    sample_rate: Number(row.sample_rate),
    max_items_per_day: row.max_items_per_day ?? null,
    enabled: Boolean(row.enabled),
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    stats: stats
      ? {
          considered: Number(stats.considered),
          matched: Number(stats.matched),
          sampled_out: Number(stats.sampled_out),
          capped: Number(stats.capped),
          added: Number(stats.added),
          last_added_at: isoOrNullFromSql(stats.last_added_at),
        }
      : NO_STATS,
    backfill:
      row.backfill_state === null || row.backfill_since === null
        ? null
        : {
            since: row.backfill_since.toISOString(),
            state: row.backfill_state as 'running' | 'done' | 'failed',
            considered: row.backfill_considered,
            added: row.backfill_added,
            reason: row.backfill_reason ?? null,
          },
  };
}

/** The rules' stats: the sums of their days. */
async function statsOf(db: SqlScope, ruleIds: readonly string[]): Promise<Map<string, StatsRow>> {
  if (!ruleIds.length) return new Map();
  const rows = await sqlRows<StatsRow>(db,
    sql`select rule_id, sum(considered) as considered, sum(matched) as matched, sum(sampled_out) as sampled_out, sum(capped) as capped,
        sum(added) as added, max(last_added_at) as last_added_at
      from queue_rule_days where rule_id in (${sql.list(ruleIds)}) group by rule_id`);
  return new Map(rows.map((row) => [row.rule_id, row]));
}

async function rulesWithStats(db: SqlScope, rows: readonly RuleRow[]): Promise<QueueRule[]> {
  const stats = await statsOf(db, rows.map((row) => row.id));
  return rows.map((row) => toRuleDto(row, stats.get(row.id)));
}

/** Field names, ids, times, numbers and stats of a rule's JSON. */
const RULE_FRAME_BYTES = 640;

/** A rule as a path names it. */
export type RuleRef = { projectId: string; queueId: string; ruleId: string };

/** The live rule of that live queue and project, or 404. */
async function liveRule(db: SqlScope, { projectId, queueId, ruleId }: RuleRef): Promise<RuleRow> {
  await liveQueue(db, projectId, queueId);
  const row = await typedKysely(db)
    .selectFrom('queue_rules')
    .selectAll()
    .where('id', '=', ruleId)
    .where('queue_id', '=', queueId)
    .where('project_id', '=', projectId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw notFound(`Rule "${ruleId}" does not exist in annotation queue "${queueId}" of project ${projectId}.`);
  return row;
}

async function readRule(db: SqlScope, ref: RuleRef): Promise<QueueRule> {
  const [rule] = await rulesWithStats(db, [await liveRule(db, ref)]);
  return rule!;
}

/**
 * Rules are counted against their limits under a lock per project (PostgreSQL; SQLite writes one
 * at a time), so that two concurrent creates cannot both take the last place.
 */
async function lockProjectRules(db: SqlScope, projectId: string): Promise<void> {
  if (onPostgres(db)) await sqlRows(db, sql`select pg_advisory_xact_lock(hashtextextended(${`rules ${projectId}`}, 0))`);
}

async function checkRuleLimits(db: SqlScope, { projectId, queueId, limits }: { projectId: string; queueId: string; limits: RuleLimits }): Promise<void> {
  const [counts] = await sqlRows<{ in_queue: number | string | null; in_project: number | string }>(db,
    sql`select sum(case when r.queue_id = ${queueId} then 1 else 0 end) as in_queue, count(*) as in_project from queue_rules r
      where r.project_id = ${projectId} and r.deleted_at is null
        and exists (select 1 from annotation_queues q where q.id = r.queue_id and q.deleted_at is null)`);
  if (Number(counts?.in_queue ?? 0) >= limits.perQueue) {
    throw invalid(`Annotation queue "${queueId}" already has ${limits.perQueue} rules, the most a queue may have (LOUPE_MAX_RULES_PER_QUEUE); delete one first.`);
  }
  if (Number(counts?.in_project ?? 0) >= limits.perProject) {
    throw invalid(`Project ${projectId} already has ${limits.perProject} rules, the most a project may have (LOUPE_MAX_RULES_PER_PROJECT); delete one first.`);
  }
}

/** The columns of a new backfill from `since` (null: none), requested at `now`: running, from the start, no lease. */
function backfillStart(since: string | null | undefined, now: Date) {
  const running = since !== null && since !== undefined;
  return {
    backfillSince: running ? new Date(since) : null,
    backfillState: running ? 'running' : null,
    backfillConsidered: 0,
    backfillAdded: 0,
    backfillReason: null,
    backfillUntil: running ? now : null,
    backfillAfterStartedAt: null,
    backfillAfterId: null,
    backfillLeaseOwner: null,
    backfillLeaseExpiresAt: null,
    backfillFailures: 0,
  };
}

/** backfillStart's values by column name, for typed Kysely. */
function backfillColumns(start: ReturnType<typeof backfillStart>) {
  return {
    backfill_since: start.backfillSince,
    backfill_state: start.backfillState,
    backfill_considered: start.backfillConsidered,
    backfill_added: start.backfillAdded,
    backfill_reason: start.backfillReason,
    backfill_until: start.backfillUntil,
    backfill_after_started_at: start.backfillAfterStartedAt,
    backfill_after_id: start.backfillAfterId,
    backfill_lease_owner: start.backfillLeaseOwner,
    backfill_lease_expires_at: start.backfillLeaseExpiresAt,
    backfill_failures: start.backfillFailures,
  };
}

export async function createRule(em: Em, { req, userId, limits }: { req: QueueRuleCreateReq; userId: string; limits: RuleLimits }): Promise<QueueRule> {
  const id = newId();
  const now = new Date();
  await em.transactional(async (tx) => {
    await lockProjectRules(tx, req.project_id);
    await liveQueue(tx, req.project_id, req.queue_id);
    await checkRuleLimits(tx, { projectId: req.project_id, queueId: req.queue_id, limits });
    await ensureProject(tx, req.project_id);
    tx.create(QueueRuleRecord, {
      id,
      projectId: req.project_id,
      queueId: req.queue_id,
      name: req.name,
      trigger: req.trigger,
      filter: req.filter,
      sampleRate: req.sample_rate ?? 1,
      maxItemsPerDay: req.max_items_per_day ?? null,
      enabled: true,
      createdBy: userId,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
      ...backfillStart(req.backfill_since, now),
    });
  });
  return readRule(em, { projectId: req.project_id, queueId: req.queue_id, ruleId: id });
}

/** The rules of a queue, oldest first; 413 when their filters alone are more than an answer may hold. */
export async function queryRules(db: SqlScope, { projectId, queueId, budget }: { projectId: string; queueId: string; budget: number }): Promise<QueueRule[]> {
  await liveQueue(db, projectId, queueId);
  const [size] = await sqlRows<{ bytes: number | string | null }>(db,
    sql`select sum(${storedBytes(db, 'filter', 'json')} + ${storedBytes(db, 'name')} + ${RULE_FRAME_BYTES}) as bytes from queue_rules
      where queue_id = ${queueId} and project_id = ${projectId} and deleted_at is null`);
  requireAnswerFits({ what: 'rules', bytes: size?.bytes ?? 0, budget, narrower: 'delete rules, or raise LOUPE_MAX_RESPONSE_BYTES' });
  const rows = await typedKysely(db)
    .selectFrom('queue_rules')
    .selectAll()
    .where('queue_id', '=', queueId)
    .where('project_id', '=', projectId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rulesWithStats(db, rows);
}

/** Changes the fields given; a `backfill_since` starts a new backfill (null removes it). The trigger never changes. */
export async function updateRule(em: Em, req: QueueRuleUpdateReq): Promise<QueueRule> {
  const ref = { projectId: req.project_id, queueId: req.queue_id, ruleId: req.rule_id };
  await em.transactional(async (tx) => {
    const row = await liveRule(tx, ref);
    if (req.filter !== undefined) {
      const problem = ruleFilterProblem(row.trigger as QueueRule['trigger'], req.filter);
      if (problem) throw invalid(`Invalid request at ${describeFilterProblem(problem)}.`);
    }
    const now = new Date();
    await typedKysely(tx)
      .updateTable('queue_rules')
      .set({
        updated_at: now,
        ...(req.name !== undefined ? { name: req.name } : {}),
        ...(req.filter !== undefined ? { filter: req.filter } : {}),
        ...(req.sample_rate !== undefined ? { sample_rate: req.sample_rate } : {}),
        ...(req.max_items_per_day !== undefined ? { max_items_per_day: req.max_items_per_day } : {}),
        ...(req.enabled !== undefined ? { enabled: req.enabled } : {}),
        ...(req.backfill_since !== undefined ? backfillColumns(backfillStart(req.backfill_since, now)) : {}),
      })
      .where('id', '=', row.id)
      .execute();
  });
  return readRule(em, ref);
}

/** Soft delete: the rule stops and answers 404 from then on; the items it added stay. */
export async function deleteRule(db: SqlScope, ref: RuleRef): Promise<QueueRule> {
  const rule = await readRule(db, ref);
  const now = new Date();
  const changed = await typedKysely(db)
    .updateTable('queue_rules')
    .set({ deleted_at: now, updated_at: now })
    .where('id', '=', ref.ruleId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!Number(changed.numUpdatedRows)) throw notFound(`Rule "${ref.ruleId}" does not exist in annotation queue "${ref.queueId}" of project ${ref.projectId}.`);
  return { ...rule, updated_at: now.toISOString() };
}

/**
 * How many stored calls match a filter, and how many a rule would add: over the newest calls of
 * the filter's time range (and `since`), at most `scanLimit` of them, so that the cost is bounded
 * whatever the project's size; the answer says when the limit cut the scan short. Writes nothing.
 */
export async function previewRule(db: SqlScope, { req, scanLimit }: { req: QueueRulePreviewReq; scanLimit: number }): Promise<QueueRulePreviewRes> {
  await liveQueue(db, req.project_id, req.queue_id);
  if (!onPostgres(db)) return countPreview(db, { req, scanLimit });
  return sqlTransaction(db, async (tx) => {
    await allowSorts(tx, false);
    await withoutJit(tx);
    return countPreview(tx, { req, scanLimit });
  });
}

/**
 * Whether PostgreSQL may sort, for the rest of the transaction. A preview scans the newest calls
 * of a range and a backfill chunk the next ones: calls_started_idx (project_id, started_at, id)
 * in order. Without sorts, the planner walks it whatever its statistics say; those of a project
 * that had just grown by a million calls (autovacuum had not analyzed it yet) took the project
 * for 8,734 calls and read all million with a bitmap scan to sort them: a preview of 20 conditions
 * 2.3–2.9 s instead of 0.5, a backfill chunk of 1,000 650 ms instead of 2.
 */
export async function allowSorts(tx: SqlScope, allowed: boolean): Promise<void> {
  // Allowed again is the server's own setting, whatever it is.
  await sqlRun(tx, allowed ? sql`set local enable_sort to default` : sql`set local enable_sort = off`);
}

/**
 * PostgreSQL compiles a statement it estimates as costly to machine code first (JIT): a preview
 * of 100,000 calls spent most of its time compiling its conditions, which it then ran once each.
 */
export async function withoutJit(tx: SqlScope): Promise<void> {
  await sqlRun(tx, sql`set local jit = off`);
}

/**
 * The columns of the scanned calls: every column a filter may read. PostgreSQL computes only those
 * the outer query uses; SQLite would copy each scanned row's inputs and output (its text search
 * reads its own index instead), which may be megabytes.
 */
const scannedColumns = perDialect((db) =>
  onPostgres(db) ? sql`*` : sql`rowid as rowid, project_id, id, trace_id, parent_id, op_name, started_at, ended_at, attributes, exception, created_at, created_by`,
);

async function countPreview(db: SqlScope, { req, scanLimit }: { req: QueueRulePreviewReq; scanLimit: number }): Promise<QueueRulePreviewRes> {
  const { started_after: after, started_before: before, ...rest } = req.filter;
  const from = [after, req.since].filter((time): time is string => time !== undefined).map((time) => Date.parse(time));
  const range = [sql`project_id = ${req.project_id}`];
  if (from.length) range.push(sql`started_at >= ${sqlDate(db, new Date(Math.max(...from)))}`);
  if (before !== undefined) range.push(sql`started_at < ${sqlDate(db, new Date(before))}`);
  const where = sql.join(range, ' and ');
  // The scanned rows keep the table's name, so that the filter's conditions read their columns;
  // each condition is evaluated once per row: the OFFSET keeps both databases from merging `s`
  // into the outer query, which would evaluate `m` once for each of its two uses (PostgreSQL, 20
  // conditions over 100,000 calls: 3.9 → 2.3 s). On SQLite they keep the call's rowid as a column
  // too: a text condition names the call by it (calls.rowid, Migration0016CallFilterIndexes), and
  // a derived table has none of its own.
  const conditions = callFilterConditions(db, rest);
  const matches = conditions.length ? sql.join(conditions, ' and ') : sql`1 = 1`;
  const [counts] = await sqlRows<{ scanned: number | string; matching: number | string | null; fresh: number | string | null }>(db,
    sql`select count(*) as scanned, sum(s.m) as matching,
        sum(case when s.m = 1 and not exists (select 1 from annotation_queue_items i where i.queue_id = ${req.queue_id} and i.call_id = s.id and i.deleted_at is null)
          and not exists (select 1 from annotation_queue_items i where i.queue_id = ${req.queue_id} and i.call_id = s.id and i.deleted_at is not null) then 1 else 0 end) as fresh
      from (select calls.id, case when ${matches} then 1 else 0 end as m
        from (select ${scannedColumns(db)} from calls where ${where} order by started_at desc, id desc limit ${scanLimit}) calls
        limit ${scanLimit} offset 0) s`);
  const scanned = Number(counts?.scanned ?? 0);
  const more = scanned < scanLimit ? [] : await sqlRows(db, sql`select 1 as more from calls where ${where} order by started_at desc, id desc limit 1 offset ${scanLimit}`);
  const rate = req.sample_rate ?? 1;
  return {
    matching_calls: Number(counts?.matching ?? 0),
    would_add: Math.round(Number(counts?.fresh ?? 0) * rate),
    scanned_calls: scanned,
    scan_limit_reached: more.length > 0,
  };
}
