import type { AuditAction, AuditEvent, AuditQueryReq } from '@loupe/shared';
import { isoFromSql, jsonAsText, jsonFromSql, jsonParam, sqlDate, sqlRows, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { decodeCursor, encodeCursor, keyset, keysetOrder, queryFingerprint, type KeysetKey } from './cursor.ts';
import { newId } from './ids.ts';
import type { Page } from './paging.ts';

// The audit log (contract 5.12): who did what to the people of an entity, when, from where. An
// event about a user rather than an entity (a sign-in, a key) is written once for each entity the
// user belongs to, so that each entity's admins read it in their own log; with none, once with no
// entity (kept, shown to no one through the API).

/** Who did it: a user, or nobody (the admin tool, an unknown username). */
export type Actor = { userId: string; username: string } | null;

export type AuditRecord = {
  action: AuditAction;
  actor: Actor;
  subjectUserId?: string | null;
  detail?: Record<string, unknown> | null;
  client: string | null;
};

/** Writes an event into the log of each of `entities` (an empty list: once, without an entity). */
export async function recordAudit(db: SqlScope, entities: readonly string[], event: AuditRecord): Promise<void> {
  const now = sqlDate(db, new Date());
  const detail = event.detail ? JSON.stringify(event.detail) : null;
  for (const entity of entities.length ? entities : [null]) {
    await sqlRun(db, sql`insert into audit_events (id, entity, action, actor_user_id, actor_username, subject_user_id, detail, client_address, created_at)
      values (${newId()}, ${entity}, ${event.action}, ${event.actor?.userId ?? null}, ${event.actor?.username ?? null}, ${event.subjectUserId ?? null},
              ${jsonParam(db, detail)}, ${event.client}, ${now})`);
  }
}

/** The entities a user belongs to (where an event about them is written). */
export async function entitiesOfUser(db: SqlScope, userId: string): Promise<string[]> {
  const rows = await sqlRows<{ entity: string }>(db, sql`select entity from memberships where user_id = ${userId} order by entity`);
  return rows.map((row) => row.entity);
}

type AuditRow = {
  id: string;
  action: AuditAction;
  actor_user_id: string | null;
  actor_username: string | null;
  subject_user_id: string | null;
  detail: unknown;
  client_address: string | null;
  created_at: unknown;
};

/** Newest first; the id breaks ties. */
const KEYS: KeysetKey[] = [
  { column: 'created_at', field: 'created_at', type: 'date', direction: 'desc' },
  { column: 'id', field: 'id', type: 'text', direction: 'desc' },
];
/** Events are small (well under 1 KB): a page of this many stays far below the answer's byte budget. */
const MAX_PAGE = 1000;

export async function queryAudit(db: SqlScope, { req, page }: { req: AuditQueryReq; page: Page }): Promise<{ events: AuditEvent[]; next_cursor: string | null }> {
  const where: Statement[] = [sql`entity = ${req.entity}`];
  const fingerprint = queryFingerprint({ of: 'audit events', entity: req.entity }, page.seal);
  if (page.cursor !== undefined) where.push(keyset(KEYS, decodeCursor(db, { fingerprint, keys: KEYS }, page.cursor).values, 'after'));
  const limit = Math.min(page.limit, MAX_PAGE);
  const rows = await sqlRows<AuditRow>(db,
    sql`select id, action, actor_user_id, actor_username, subject_user_id, ${jsonAsText(db, 'detail')} as detail, client_address, created_at
          from audit_events where ${sql.join(where, ' and ')} order by ${keysetOrder(KEYS)} limit ${limit + 1}`);
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return {
    events: shown.map((row) => ({
      id: row.id,
      action: row.action,
      actor_user_id: row.actor_user_id,
      actor_username: row.actor_username,
      subject_user_id: row.subject_user_id,
      detail: row.detail === null ? null : jsonFromSql<Record<string, unknown>>(row.detail),
      client_address: row.client_address,
      created_at: isoFromSql(row.created_at),
    })),
    next_cursor: rows.length > limit && last ? encodeCursor({ fingerprint, keys: KEYS }, last) : null,
  };
}
