import type { Webhook, WebhookCreateReq, WebhookRef, WebhookSubscription, WebhookUpdateReq } from '@loupe/shared';
import { dateFromSql, isoFromSql, jsonFromSql, jsonParam, sqlDate, sqlRows, sqlRun, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { ensureProject } from './access.ts';
import { invalid, notFound } from './errors.ts';
import { newId } from './ids.ts';
import { checkWebhookTarget, type ResolveHost, type UrlPolicy } from './webhook-addresses.ts';
import { newSigningSecret, type SecretBox } from './webhook-secrets.ts';

// Webhooks of a project (contract 5.13): create, list, change, delete, rotate the secret. The
// secret is shown once, at creation and at each rotation; the stored one is sealed (webhook-secrets.ts).

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/** What a webhook's url is checked against: the settings, and the resolver of host names. */
export type WebhookTargetPolicy = UrlPolicy & { resolve: ResolveHost };

/** A webhook as WEBHOOK_COLUMNS read it, times and JSON as the driver gives them. */
export type WebhookRow = {
  id: string;
  project_id: string;
  url: string;
  events: unknown;
  description: string | null;
  disabled_at: unknown;
  disabled_reason: string | null;
  created_by: string;
  created_at: unknown;
  updated_at: unknown;
};

const WEBHOOK_COLUMNS = sql`id, project_id, url, events, description, disabled_at, disabled_reason, created_by, created_at, updated_at`;

export function toWebhookDto(row: WebhookRow): Webhook {
  return {
    id: row.id,
    project_id: row.project_id,
    url: row.url,
    events: jsonFromSql<WebhookSubscription[]>(row.events),
    description: row.description ?? null,
    enabled: row.disabled_at === null || row.disabled_at === undefined,
    disabled_reason: row.disabled_reason ?? null,
    created_by: row.created_by,
    created_at: isoFromSql(row.created_at),
    updated_at: isoFromSql(row.updated_at),
  };
}

/** The subscriptions as stored: each once, `*` alone when it is there (it means all of them). */
function subscriptions(events: readonly WebhookSubscription[]): WebhookSubscription[] {
  return events.includes('*') ? ['*'] : [...new Set(events)];
}

export async function createWebhook(
  db: SqlScope,
  { req, userId, box, policy }: { req: WebhookCreateReq; userId: string; box: SecretBox; policy: WebhookTargetPolicy },
): Promise<{ webhook: Webhook; secret: string }> {
  const url = await checkWebhookTarget(req.url, policy);
  const secret = newSigningSecret();
  const id = newId();
  const at = sqlDate(db, new Date());
  await sqlTransaction(db, async (tx) => {
    await ensureProject(tx, req.project_id);
    await sqlRun(tx, sql`insert into webhooks (id, project_id, url, events, description, secret, created_by, created_at, updated_at)
      values (${id}, ${req.project_id}, ${url}, ${jsonParam(tx, JSON.stringify(subscriptions(req.events)))}, ${req.description ?? null},
        ${box.seal(secret)}, ${userId}, ${at}, ${at})`);
  });
  return { webhook: await readWebhook(db, { id, project_id: req.project_id }), secret };
}

export async function queryWebhooks(db: SqlScope, projectId: string): Promise<Webhook[]> {
  const rows = await sqlRows<WebhookRow>(db,
    sql`select ${WEBHOOK_COLUMNS} from webhooks where project_id = ${projectId} and deleted_at is null order by created_at, id`);
  return rows.map(toWebhookDto);
}

const webhookNotFound = ({ id, project_id }: WebhookRef) => notFound(`Webhook "${id}" does not exist in project ${project_id}.`);

/** The live webhook a path names, or 404. */
export async function readWebhook(db: SqlScope, ref: WebhookRef): Promise<Webhook> {
  const [row] = await sqlRows<WebhookRow>(db,
    sql`select ${WEBHOOK_COLUMNS} from webhooks where id = ${ref.id} and project_id = ${ref.project_id} and deleted_at is null`);
  if (!row) throw webhookNotFound(ref);
  return toWebhookDto(row);
}

/** Pending deliveries of a webhook that was disabled or deleted end as failed, with the reason. */
async function endPendingDeliveries(tx: SqlScope, { webhookId, reason, now }: { webhookId: string; reason: string; now: Date }): Promise<void> {
  const at = sqlDate(tx, now);
  await sqlRun(tx, sql`update webhook_deliveries set state = 'failed', last_error = ${reason}, next_attempt_at = null, updated_at = ${at}
    where webhook_id = ${webhookId} and state = 'pending'`);
}

/**
 * Disables a webhook with the server's reason (a 410, days of failures) and ends its pending
 * deliveries; in the caller's transaction. Returns false when it was disabled or gone already.
 */
export async function disableWebhook(tx: SqlScope, { webhookId, reason, now }: { webhookId: string; reason: string; now: Date }): Promise<boolean> {
  const at = sqlDate(tx, now);
  const changed = await sqlRun(tx, sql`update webhooks set disabled_at = ${at}, disabled_reason = ${reason}, updated_at = ${at}
    where id = ${webhookId} and disabled_at is null and deleted_at is null`);
  if (changed) await endPendingDeliveries(tx, { webhookId, reason: `the webhook was disabled: ${reason}`, now });
  return changed > 0;
}

/**
 * A partial update. A new url is checked as at creation. `enabled: true` clears the server's
 * reason and the run of failures; `enabled: false` disables it (no reason: a person did) and ends
 * its pending deliveries, which can be retried by hand once it is enabled again.
 */
export async function updateWebhook(db: SqlScope, { req, policy }: { req: WebhookUpdateReq; policy: WebhookTargetPolicy }): Promise<Webhook> {
  const ref = { id: req.id, project_id: req.project_id };
  const url = req.url === undefined ? undefined : await checkWebhookTarget(req.url, policy);
  const now = new Date();
  const at = sqlDate(db, now);
  await sqlTransaction(db, async (tx) => {
    const [row] = await sqlRows<{ disabled_at: unknown }>(tx,
      sql`select disabled_at from webhooks where id = ${ref.id} and project_id = ${ref.project_id} and deleted_at is null`);
    if (!row) throw webhookNotFound(ref);
    const sets = [sql`updated_at = ${at}`];
    if (url !== undefined) sets.push(sql`url = ${url}`);
    if (req.events !== undefined) sets.push(sql`events = ${jsonParam(tx, JSON.stringify(subscriptions(req.events)))}`);
    if (req.description !== undefined) sets.push(sql`description = ${req.description}`);
    const wasEnabled = row.disabled_at === null;
    if (req.enabled === true && !wasEnabled) sets.push(sql`disabled_at = null, disabled_reason = null, failing_since = null`);
    if (req.enabled === false && wasEnabled) sets.push(sql`disabled_at = ${at}, disabled_reason = null`);
    await sqlRun(tx, sql`update webhooks set ${sql.join(sets, ', ')} where id = ${ref.id}`);
    if (req.enabled === false && wasEnabled) await endPendingDeliveries(tx, { webhookId: ref.id, reason: 'the webhook was disabled', now });
  });
  return readWebhook(db, ref);
}

/** Soft delete: the webhook answers 404 from then on; its pending deliveries end as failed. */
export async function deleteWebhook(db: SqlScope, ref: WebhookRef): Promise<Webhook> {
  const webhook = await readWebhook(db, ref);
  const now = new Date();
  const at = sqlDate(db, now);
  await sqlTransaction(db, async (tx) => {
    const changed = await sqlRun(tx, sql`update webhooks set deleted_at = ${at}, updated_at = ${at}
      where id = ${ref.id} and project_id = ${ref.project_id} and deleted_at is null`);
    if (!changed) throw webhookNotFound(ref);
    await endPendingDeliveries(tx, { webhookId: ref.id, reason: 'the webhook was deleted', now });
  });
  return { ...webhook, updated_at: now.toISOString() };
}

/**
 * A new secret; the current one keeps signing for 24 hours beside it (both signatures are sent),
 * so receivers can move to the new one without missing a delivery. A second rotation within the
 * overlap ends the oldest secret at once.
 */
export async function rotateWebhookSecret(db: SqlScope, { ref, box }: { ref: WebhookRef; box: SecretBox }): Promise<{ secret: string; previous_secret_expires_at: string }> {
  const secret = newSigningSecret();
  const now = new Date();
  const expires = new Date(now.getTime() + ROTATION_OVERLAP_MS);
  const changed = await sqlRun(db, sql`update webhooks set previous_secret = secret, previous_secret_expires_at = ${sqlDate(db, expires)},
      secret = ${box.seal(secret)}, updated_at = ${sqlDate(db, now)}
    where id = ${ref.id} and project_id = ${ref.project_id} and deleted_at is null`);
  if (!changed) throw webhookNotFound(ref);
  return { secret, previous_secret_expires_at: expires.toISOString() };
}

/** The live webhook a path names, enabled, or 404 / 400. */
export async function enabledWebhook(db: SqlScope, ref: WebhookRef): Promise<Webhook> {
  const webhook = await readWebhook(db, ref);
  if (!webhook.enabled) throw invalid(`Webhook "${ref.id}" is disabled${webhook.disabled_reason ? ` (${webhook.disabled_reason})` : ''}: enable it first.`);
  return webhook;
}

/** A webhook's stored secrets, as a delivery reads them. */
export type SigningRow = { secret: string; previous_secret: string | null; previous_secret_expires_at: unknown };

/** The sealed secrets a delivery is signed with: the current one, and the previous one while its overlap lasts. */
export function signingSecrets(row: SigningRow, now: Date): string[] {
  return row.previous_secret && stillAfter(row.previous_secret_expires_at, now) ? [row.secret, row.previous_secret] : [row.secret];
}

/** Whether a stored date is set and after `now`. */
export function stillAfter(value: unknown, now: Date): boolean {
  return value !== null && value !== undefined && dateFromSql(value).getTime() > now.getTime();
}
