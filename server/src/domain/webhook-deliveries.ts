import type { WebhookDeliveriesQueryReq, WebhookDelivery, WebhookDeliveryRetryReq, WebhookRef, WebhookTestData } from '@loupe/shared';
import { dateFromSql, isoFromSql, isoOrNullFromSql, lockClause, onPostgres, sqlDate, sqlRows, sqlRun, sqlTransaction, UNSYNCED_COMMIT, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { decodeCursor, encodeCursor, keyset, keysetOrder, queryFingerprint, type KeysetKey } from './cursor.ts';
import { conflict, notFound } from './errors.ts';
import type { Page } from './paging.ts';
import { insertEvent, type DueDelivery, type WebhookWake } from './webhook-outbox.ts';
import { disableWebhook, enabledWebhook, readWebhook, signingSecrets, stillAfter } from './webhooks.ts';

// Deliveries of webhook events: what a person reads and retries, and what the delivery workers
// (webhooks/delivery-worker.ts) claim, attempt and record. One delivery is one event to one
// webhook; its lease lets one process at a time attempt it.

/** A webhook failing without a break for this long is disabled (contract 5.13). */
export const DISABLE_AFTER_FAILING_MS = 5 * 86_400_000;
/** The longest last_error kept: a receiver's words never grow the table without bound. */
const MAX_ERROR_CHARS = 500;

type DeliveryRow = {
  id: string;
  event_id: string;
  type: string;
  state: WebhookDelivery['state'];
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: unknown;
  created_at: unknown;
};

const DELIVERY_COLUMNS = sql`d.id, d.event_id, e.type, d.state, d.attempts, d.last_status, d.last_error, d.next_attempt_at, d.created_at`;
const DELIVERY_FROM = sql`webhook_deliveries d join webhook_events e on e.id = d.event_id`;

function toDeliveryDto(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    event_id: row.event_id,
    type: row.type,
    state: row.state,
    attempts: Number(row.attempts),
    last_status: row.last_status === null ? null : Number(row.last_status),
    last_error: row.last_error ?? null,
    next_attempt_at: isoOrNullFromSql(row.next_attempt_at),
    created_at: isoFromSql(row.created_at),
  };
}

/** Newest first; the id breaks ties. */
const KEYS: KeysetKey[] = [
  { column: 'd.created_at', field: 'created_at', type: 'date', direction: 'desc' },
  { column: 'd.id', field: 'id', type: 'text', direction: 'desc' },
];
/** A page holds at most this many deliveries (each well under 1 KB), whatever `limit` asks: the answer stays far below the byte budget. */
const MAX_PAGE = 1000;

export async function queryDeliveries(db: SqlScope, { req, page }: { req: WebhookDeliveriesQueryReq; page: Page }): Promise<{ deliveries: WebhookDelivery[]; next_cursor: string | null }> {
  await readWebhook(db, { id: req.id, project_id: req.project_id });
  const where: Statement[] = [sql`d.webhook_id = ${req.id}`];
  if (req.state) where.push(sql`d.state = ${req.state}`);
  const fingerprint = queryFingerprint({ of: 'webhook deliveries', project_id: req.project_id, webhook_id: req.id, state: req.state }, page.seal);
  if (page.cursor !== undefined) where.push(keyset(KEYS, decodeCursor(db, { fingerprint, keys: KEYS }, page.cursor).values, 'after'));
  const limit = Math.min(page.limit, MAX_PAGE);
  const rows = await sqlRows<DeliveryRow>(db,
    sql`select ${DELIVERY_COLUMNS} from ${DELIVERY_FROM} where ${sql.join(where, ' and ')} order by ${keysetOrder(KEYS)} limit ${limit + 1}`);
  const more = rows.length > limit;
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return {
    deliveries: shown.map(toDeliveryDto),
    next_cursor: more && last ? encodeCursor({ fingerprint, keys: KEYS }, last) : null,
  };
}

async function readDelivery(db: SqlScope, { webhookId, deliveryId }: { webhookId: string; deliveryId: string }): Promise<WebhookDelivery> {
  const [row] = await sqlRows<DeliveryRow>(db, sql`select ${DELIVERY_COLUMNS} from ${DELIVERY_FROM} where d.id = ${deliveryId} and d.webhook_id = ${webhookId}`);
  if (!row) throw notFound(`Delivery "${deliveryId}" does not exist for webhook "${webhookId}".`);
  return toDeliveryDto(row);
}

/**
 * Sends a delivery again now (`POST /webhooks/{id}/deliveries/{delivery_id}/retry`): it is pending
 * and due at once; its attempts go on counting, so after the schedule's end one failure fails it
 * again. An attempt under way is not doubled (409).
 */
export async function retryDelivery(db: SqlScope, { req, wake }: { req: WebhookDeliveryRetryReq; wake: WebhookWake }): Promise<WebhookDelivery> {
  await enabledWebhook(db, { id: req.id, project_id: req.project_id });
  const now = new Date();
  const at = sqlDate(db, now);
  await sqlTransaction(db, async (tx) => {
    const [row] = await sqlRows<{ state: string; lease_expires_at: unknown }>(tx,
      sql`select state, lease_expires_at from webhook_deliveries where id = ${req.delivery_id} and webhook_id = ${req.id}${lockClause(tx, 'for update')}`);
    if (!row) throw notFound(`Delivery "${req.delivery_id}" does not exist for webhook "${req.id}".`);
    if (row.state === 'pending' && stillAfter(row.lease_expires_at, now)) throw conflict('An attempt of this delivery is under way; retry once it has ended.');
    await sqlRun(tx, sql`update webhook_deliveries set state = 'pending', next_attempt_at = ${at}, updated_at = ${at} where id = ${req.delivery_id}`);
  });
  // Read before the worker is woken: the answer shows the delivery as this request left it.
  const delivery = await readDelivery(db, { webhookId: req.id, deliveryId: req.delivery_id });
  wake.webhooksWritten([]);
  return delivery;
}

/** `POST /webhooks/{id}/test`: a `webhook.test` event to this webhook alone, due now. */
export async function testWebhook(db: SqlScope, { ref, wake }: { ref: WebhookRef; wake: WebhookWake }): Promise<WebhookDelivery> {
  await enabledWebhook(db, ref);
  const { event, deliveryIds } = await sqlTransaction(db, (tx) =>
    insertEvent(tx, {
      type: 'webhook.test',
      projectId: ref.project_id,
      dataJson: JSON.stringify({ project_id: ref.project_id, webhook_id: ref.id } satisfies WebhookTestData),
      webhookIds: [ref.id],
      now: new Date(),
    }),
  );
  const delivery = await readDelivery(db, { webhookId: ref.id, deliveryId: deliveryIds[0]! });
  wake.webhooksWritten([event]);
  return delivery;
}

// ---- the delivery workers' side ----

/**
 * Leases up to `limit` due deliveries of live, enabled webhooks to `owner` until `leaseUntil`.
 * PostgreSQL: FOR UPDATE SKIP LOCKED, so processes claiming at once take different rows; a lease
 * not yet expired keeps every other process off the delivery while it is attempted (one attempt
 * per event and endpoint at a time). SQLite: one process, one connection. The events' payloads
 * are read apart (eventData), as the worker often holds them already.
 */
export async function claimDueDeliveries(db: SqlScope, { owner, limit, now, leaseUntil }: { owner: string; limit: number; now: Date; leaseUntil: Date }): Promise<DueDelivery[]> {
  const at = sqlDate(db, now);
  const claim = sql`update webhook_deliveries set lease_owner = ${owner}, lease_expires_at = ${sqlDate(db, leaseUntil)}
    where id in (select d.id from webhook_deliveries d join webhooks w on w.id = d.webhook_id
      where d.next_attempt_at <= ${at} and d.state = 'pending' and (d.lease_expires_at is null or d.lease_expires_at < ${at})
        and w.deleted_at is null and w.disabled_at is null
      order by d.next_attempt_at limit ${limit}${lockClause(db, 'for update of d skip locked')})
    returning id, webhook_id, event_id, attempts`;
  const details = (claimed: Statement) => sql`select c.id, c.webhook_id, c.event_id, c.attempts, e.type, e.created_at as event_at,
      w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, w.failing_since
    from ${claimed} join webhook_events e on e.id = c.event_id join webhooks w on w.id = c.webhook_id`;
  type Row = {
    id: string; webhook_id: string; event_id: string; attempts: number; type: string; event_at: unknown; url: string;
    secret: string; previous_secret: string | null; previous_secret_expires_at: unknown; failing_since: unknown;
  };
  let rows: Row[];
  if (onPostgres(db)) {
    // One round trip: the claim and what its attempts need.
    rows = await sqlRows<Row>(db, sql`with c as (${claim}) ${details(sql`c`)}`);
  } else {
    const claimed = await sqlRows<{ id: string }>(db, claim);
    if (!claimed.length) return [];
    rows = await sqlRows<Row>(db, details(sql`(select id, webhook_id, event_id, attempts from webhook_deliveries where id in (${sql.list(claimed.map((row) => row.id))})) c`));
  }
  return rows.map((row) => ({
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    attempts: Number(row.attempts),
    type: row.type,
    eventAt: dateFromSql(row.event_at),
    url: row.url,
    sealedSecrets: signingSecrets(row, now),
    webhookFailing: row.failing_since !== null && row.failing_since !== undefined,
  }));
}

/** The payloads (JSON text as written) of these events. */
export async function eventData(db: SqlScope, eventIds: readonly string[]): Promise<Map<string, string>> {
  if (!eventIds.length) return new Map();
  const rows = await sqlRows<{ id: string; data: string }>(db, sql`select id, data from webhook_events where id in (${sql.list(eventIds)})`);
  return new Map(rows.map((row) => [row.id, row.data]));
}

/** How an attempt ended. */
export type AttemptOutcome = { kind: 'delivered'; status: number } | FailedAttempt;
export type FailedAttempt = { kind: 'failed'; status: number | null; error: string; retryAfterMs?: number; gone?: boolean };

/**
 * Records attempts that delivered, those whose lease `owner` still holds: one statement per
 * status (mostly one for all), and the end of the run of failures of webhooks that were in one.
 */
export async function recordDelivered(
  db: SqlScope,
  { owner, delivered, now = new Date() }: { owner: string; delivered: readonly { delivery: DueDelivery; status: number }[]; now?: Date },
): Promise<void> {
  const at = sqlDate(db, now);
  const recovered = new Set<string>();
  // PostgreSQL: the statement's own transaction commits without waiting for its log to reach the
  // disk (synchronous_commit off until that commit). A crash that loses the record leaves the
  // delivery pending under a lease that expires: the event is delivered again, with the same
  // webhook-id, as at-least-once allows. One flush fewer per delivered event, beside the writes'.
  const unsynced = onPostgres(db) ? sql` from ${UNSYNCED_COMMIT}` : sql``;
  for (const [status, entries] of Map.groupBy(delivered, (entry) => entry.status)) {
    const deliveries = entries.map((entry) => entry.delivery);
    // The lease holder alone changes a leased delivery: its attempts go up by this one.
    const rows = await sqlRows<{ id: string }>(db, sql`update webhook_deliveries set state = 'delivered', attempts = attempts + 1, last_status = ${status},
        last_error = null, next_attempt_at = null, lease_owner = null, lease_expires_at = null, updated_at = ${at}${unsynced}
      where lease_owner = ${owner} and id in (${sql.list(deliveries.map((delivery) => delivery.id))}) returning id`);
    const changed = new Set(rows.map((row) => row.id));
    for (const delivery of deliveries) if (delivery.webhookFailing && changed.has(delivery.id)) recovered.add(delivery.webhookId);
  }
  if (recovered.size) await sqlRun(db, sql`update webhooks set failing_since = null where id in (${sql.list([...recovered])})`);
}

/**
 * Records a failed attempt, if `owner` still holds the delivery's lease: pending again after the
 * schedule's next delay (or the receiver's Retry-After, when longer); failed after the schedule's
 * last. The webhook's run of failures starts with it; a 410, or a run of five days, disables the
 * webhook with the reason.
 */
export async function recordFailure(
  db: SqlScope,
  { delivery, owner, outcome, schedule, now = new Date() }: { delivery: DueDelivery; owner: string; outcome: FailedAttempt; schedule: readonly number[]; now?: Date },
): Promise<void> {
  const at = sqlDate(db, now);
  const attempts = delivery.attempts + 1;
  const mine = sql`id = ${delivery.id} and lease_owner = ${owner}`;
  await sqlTransaction(db, async (tx) => {
    const error = outcome.error.slice(0, MAX_ERROR_CHARS);
    const delay = outcome.gone ? undefined : schedule[attempts - 1];
    const next = delay === undefined ? null : new Date(now.getTime() + Math.max(delay, outcome.retryAfterMs ?? 0));
    // The webhook's row first, as disableWebhook, updateWebhook and deleteWebhook lock it before its
    // deliveries: two failures of one webhook recorded at once (a 410 to both) would otherwise each
    // hold its delivery and wait for the other's (PostgreSQL: a deadlock).
    await sqlRows(tx, sql`select id from webhooks where id = ${delivery.webhookId}${lockClause(tx, 'for no key update')}`);
    const changed = await sqlRun(tx, sql`update webhook_deliveries set state = ${next ? 'pending' : 'failed'}, attempts = ${attempts},
        last_status = ${outcome.status}, last_error = ${error}, next_attempt_at = ${next ? sqlDate(tx, next) : null},
        lease_owner = null, lease_expires_at = null, updated_at = ${at} where ${mine}`);
    if (!changed) return;
    if (outcome.gone) {
      await disableWebhook(tx, { webhookId: delivery.webhookId, reason: 'the receiver answered 410 Gone', now });
      return;
    }
    await sqlRun(tx, sql`update webhooks set failing_since = ${at} where id = ${delivery.webhookId} and failing_since is null`);
    const [hook] = await sqlRows<{ failing_since: unknown }>(tx, sql`select failing_since from webhooks where id = ${delivery.webhookId}`);
    const since = hook?.failing_since === null || hook?.failing_since === undefined ? now : dateFromSql(hook.failing_since);
    if (now.getTime() - since.getTime() >= DISABLE_AFTER_FAILING_MS) {
      await disableWebhook(tx, { webhookId: delivery.webhookId, reason: `every attempt failed since ${since.toISOString()} (five days); the last: ${error}`, now });
    }
  });
}

/** Gives back the lease of a delivery whose attempt was abandoned (shutdown): due again at once, the attempt not counted. */
export async function releaseDelivery(db: SqlScope, { deliveryId, owner }: { deliveryId: string; owner: string }): Promise<void> {
  await sqlRun(db, sql`update webhook_deliveries set lease_owner = null, lease_expires_at = null where id = ${deliveryId} and lease_owner = ${owner}`);
}

/** Rows removed per statement by the clean-up: each statement stays short. */
const CLEANUP_CHUNK = 1000;

/**
 * Deletes finished deliveries (delivered or failed) last changed before `before`, and then events
 * older than that which no delivery needs: at most `maxRows` of each per call. Returns how many
 * rows went.
 */
export async function removeFinishedDeliveries(db: SqlScope, { before, maxRows }: { before: Date; maxRows: number }): Promise<number> {
  const cutoff = sqlDate(db, before);
  let removed = 0;
  for (let done = 0; done < maxRows; ) {
    const n = await sqlRun(db, sql`delete from webhook_deliveries where id in
      (select id from webhook_deliveries where next_attempt_at is null and updated_at < ${cutoff} limit ${CLEANUP_CHUNK})`);
    done += CLEANUP_CHUNK;
    removed += n;
    if (n < CLEANUP_CHUNK) break;
  }
  for (let done = 0; done < maxRows; ) {
    const n = await sqlRun(db, sql`delete from webhook_events where id in
      (select e.id from webhook_events e where e.created_at < ${cutoff}
         and not exists (select 1 from webhook_deliveries d where d.event_id = e.id) limit ${CLEANUP_CHUNK})`);
    done += CLEANUP_CHUNK;
    removed += n;
    if (n < CLEANUP_CHUNK) break;
  }
  return removed;
}
