import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { lockClause, onPostgres, sqlDate, sqlRows, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import type { Logger } from '../log.ts';
import { publishingTransaction, type QueueEventPublisher } from './queue-events.ts';
import { callFilterConditions } from './call-filter.ts';
import { allowSorts, withoutJit } from './queue-rules.ts';
import { ACTIVE_RULE_COLUMNS, addRuleItems, matchFlags, toActiveRule } from './rule-items.ts';

// Backfills of queue rules (contract 5.10): the calls already stored that started at or after a
// rule's `backfill_since` are considered once, in the background, in chunks in (started_at, id)
// order. Each chunk is one transaction that adds its items and records the backfill's place and
// counts: a process killed midway leaves the backfill at the end of its last committed chunk, and
// whoever works it next goes on from there, so every call is considered exactly once.
//
// A backfill is worked by the process that holds its lease (owner and expiry on the rule row,
// renewed by each chunk); another process takes it over once the lease has expired. SQLite is
// served by one process only, which takes over any lease it finds.

/** Chunks that may fail in a row before the backfill is given up as failed. */
const MAX_FAILURES = 3;

export type BackfillSettings = { chunk: number; pauseMs: number; pollMs: number; leaseMs: number };

type BackfillRow = Parameters<typeof toActiveRule>[0] & {
  backfill_since: unknown;
  backfill_until: unknown;
  backfill_after_started_at: unknown;
  backfill_after_id: string | null;
};

/** What one chunk did: went on (more to do), finished, or found the backfill no longer its own. */
export type ChunkResult = { state: 'more' | 'done' | 'lost'; considered: number; added: number };

/**
 * Takes the lease of one running backfill that no live lease holds (or that `owner` holds), of an
 * enabled rule of a live queue, or returns null. PostgreSQL skips rows another claim has locked.
 */
export async function claimBackfill(db: SqlScope, { owner, leaseMs, takeOverAny }: { owner: string; leaseMs: number; takeOverAny: boolean }): Promise<string | null> {
  const now = new Date();
  const free = takeOverAny ? sql`1 = 1` : sql`(r.backfill_lease_expires_at is null or r.backfill_lease_expires_at < ${sqlDate(db, now)} or r.backfill_lease_owner = ${owner})`;
  const [claimed] = await sqlRows<{ id: string }>(db,
    sql`update queue_rules set backfill_lease_owner = ${owner}, backfill_lease_expires_at = ${sqlDate(db, new Date(now.getTime() + leaseMs))}
      where id = (select r.id from queue_rules r
        where r.backfill_state = 'running' and r.deleted_at is null and r.enabled and ${free}
          and exists (select 1 from annotation_queues q where q.id = r.queue_id and q.deleted_at is null)
        order by r.updated_at, r.id limit 1${lockClause(db, 'for update skip locked')})
      returning id`);
  return claimed?.id ?? null;
}

/** Works the next chunk of a backfill whose lease `owner` holds, in one transaction. */
export async function backfillChunk(
  db: SqlScope,
  { ruleId, owner, settings, events }: { ruleId: string; owner: string; settings: BackfillSettings; events: QueueEventPublisher },
): Promise<ChunkResult> {
  return publishingTransaction(db, events, async (tx, record) => {
    // A chunk's read over a large project is estimated costly enough for PostgreSQL's JIT, whose
    // compiling would cost more than the chunk (see withoutJit).
    if (onPostgres(tx)) await withoutJit(tx);
    const [row] = await sqlRows<BackfillRow>(tx,
      sql`select ${ACTIVE_RULE_COLUMNS}, r.backfill_since, r.backfill_until, r.backfill_after_started_at, r.backfill_after_id from queue_rules r
        where r.id = ${ruleId} and r.backfill_state = 'running' and r.backfill_lease_owner = ${owner} and r.deleted_at is null and r.enabled
          and exists (select 1 from annotation_queues q where q.id = r.queue_id and q.deleted_at is null)${lockClause(tx, 'for no key update of r')}`);
    if (!row) return { state: 'lost', considered: 0, added: 0 };
    const rule = toActiveRule(row);
    const range = [sql`project_id = ${rule.projectId}`, sql`started_at >= ${row.backfill_since}`, sql`created_at <= ${row.backfill_until}`];
    if (row.backfill_after_id !== null) range.push(sql`(started_at, id) > (${row.backfill_after_started_at}, ${row.backfill_after_id})`);
    // started_at as the driver gives it: written back as the backfill's place.
    // Read in index order whatever the statistics say (see allowSorts); the writes after it plan freely.
    if (onPostgres(tx)) await allowSorts(tx, false);
    const calls = await sqlRows<{ id: string; started_at: unknown; flags: string }>(tx,
      sql`select id, started_at, ${matchFlags([callFilterConditions(tx, rule.filter)])} as flags from calls
        where ${sql.join(range, ' and ')} order by started_at, id limit ${settings.chunk}`);
    if (onPostgres(tx)) await allowSorts(tx, true);
    const now = new Date();
    const outcomes = await addRuleItems(tx, { results: [{ rule, considered: calls.length, matched: calls.filter((call) => call.flags === '1') }], now, record });
    const added = outcomes.get(rule.id)?.added ?? 0;
    const last = calls.at(-1);
    const done = calls.length < settings.chunk;
    await sqlRun(tx,
      sql`update queue_rules set backfill_considered = backfill_considered + ${calls.length}, backfill_added = backfill_added + ${added},
          backfill_after_started_at = ${last ? last.started_at : row.backfill_after_started_at}, backfill_after_id = ${last ? last.id : row.backfill_after_id},
          backfill_state = ${done ? 'done' : 'running'}, backfill_failures = 0,
          backfill_lease_owner = ${done ? null : owner}, backfill_lease_expires_at = ${done ? null : sqlDate(tx, new Date(now.getTime() + settings.leaseMs))}
        where id = ${ruleId}`);
    return { state: done ? 'done' : 'more', considered: calls.length, added };
  });
}

/** A chunk failed: counted, and after MAX_FAILURES in a row the backfill fails with a reason (the cause is in the log). */
async function chunkFailed(db: SqlScope, { ruleId, owner }: { ruleId: string; owner: string }): Promise<void> {
  await sqlRun(db,
    sql`update queue_rules set backfill_failures = backfill_failures + 1,
        backfill_state = case when backfill_failures + 1 >= ${MAX_FAILURES} then 'failed' else backfill_state end,
        backfill_reason = case when backfill_failures + 1 >= ${MAX_FAILURES}
          then ${`the backfill failed ${MAX_FAILURES} times in a row at the same place and stopped; the server log says why`} else backfill_reason end,
        backfill_lease_owner = null, backfill_lease_expires_at = null
      where id = ${ruleId} and backfill_lease_owner = ${owner} and backfill_state = 'running'`);
}

/**
 * The backfill worker of one server process: looks for a backfill to work every `pollMs` (or at
 * once when woken: a rule was created or changed here), and works it chunk after chunk, with a
 * pause between chunks so that requests are served meanwhile.
 */
export class RuleBackfillWorker {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly #db: SqlScope;
  readonly #events: QueueEventPublisher;
  readonly #log: Logger;
  readonly #settings: BackfillSettings;
  #stopped = false;
  /** Whether the last attempt found the database unavailable (said once per outage). */
  #unavailable = false;
  #wake: (() => void) | undefined;
  #running: Promise<void> | undefined;

  constructor({ db, events, log, settings }: { db: SqlScope; events: QueueEventPublisher; log: Logger; settings: BackfillSettings }) {
    this.#db = db;
    this.#events = events;
    this.#log = log;
    this.#settings = settings;
  }

  start(): void {
    this.#running ??= this.#loop();
  }

  /** Looks for work now rather than at the next poll. */
  wake(): void {
    this.#wake?.();
  }

  /** Stops after the chunk under way (its transaction commits or rolls back as a whole). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.wake();
    await this.#running;
  }

  async #loop(): Promise<void> {
    while (!this.#stopped) {
      let ruleId: string | null = null;
      try {
        ruleId = await claimBackfill(this.#db, { owner: this.owner, leaseMs: this.#settings.leaseMs, takeOverAny: !onPostgres(this.#db) });
        if (ruleId) await this.#work(ruleId);
        this.#unavailable = false;
      } catch (error) {
        if (isDatabaseUnavailable(error)) {
          // Not the backfill's fault: it goes on from its last chunk when the database is back.
          if (!this.#unavailable) this.#log.warn({ rule_id: ruleId }, 'rule backfill: the database is unavailable; trying again at the next poll');
          this.#unavailable = true;
        } else {
          this.#log.error({ err: error, rule_id: ruleId }, 'rule backfill: a chunk failed');
          if (ruleId) await chunkFailed(this.#db, { ruleId, owner: this.owner }).catch(() => undefined);
        }
        ruleId = null;
      }
      if (!ruleId && !this.#stopped) await this.#idle(this.#settings.pollMs);
    }
  }

  async #work(ruleId: string): Promise<void> {
    this.#log.info({ rule_id: ruleId, owner: this.owner }, 'rule backfill: working');
    while (!this.#stopped) {
      const result = await backfillChunk(this.#db, { ruleId, owner: this.owner, settings: this.#settings, events: this.#events });
      if (result.state !== 'more') {
        this.#log.info({ rule_id: ruleId, owner: this.owner, state: result.state }, result.state === 'done' ? 'rule backfill: done' : 'rule backfill: no longer ours');
        return;
      }
      if (this.#settings.pauseMs) await this.#idle(this.#settings.pauseMs);
    }
  }

  /** Waits `ms`, or less when woken or stopped. */
  async #idle(ms: number): Promise<void> {
    const controller = new AbortController();
    this.#wake = () => controller.abort();
    await sleep(ms, undefined, { signal: controller.signal }).catch(() => undefined);
    this.#wake = undefined;
  }
}
