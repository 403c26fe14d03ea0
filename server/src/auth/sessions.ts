import type { Role } from '@loupe/shared';
import type { PeopleSettings } from '../config.ts';
import { dateFromSql, sqlDate, sqlRows, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import type { AuthUser } from '../domain/auth-user.ts';
import { newId } from '../domain/ids.ts';
import { generateToken, hashToken } from './session-tokens.ts';

// Server-side sessions (contract 5.12). A request carrying the cookie costs what a key costs: the
// SHA-256 of its token and one indexed read (no password hash); its last activity is written at
// most once a minute, not per request.

/** How stale a session's last_seen_at may get before a request writes it again. */
export const TOUCH_AFTER_MS = 60_000;

type SessionRow = { session_id: string; user_id: string; username: string; last_seen_at: unknown; entity: string | null; role: Role | null };

/**
 * Starts a session for a user: the one function every way of signing in calls (password, accepted
 * invitation, and single sign-on later). Returns the token for the cookie (never stored).
 */
export async function startSession(db: SqlScope, { userId, client, settings }: { userId: string; client: string | null; settings: PeopleSettings }): Promise<{ token: string; maxAgeSeconds: number }> {
  const now = new Date();
  const { token, hash } = generateToken();
  // Sessions of the user that have ended are cleared as new ones start: the table holds live ones and a few more.
  await sqlRun(db, sql`delete from sessions where user_id = ${userId}
    and (expires_at <= ${sqlDate(db, now)} or last_seen_at <= ${sqlDate(db, new Date(now.getTime() - settings.sessionIdleMs))})`);
  await sqlRun(db, sql`insert into sessions (id, token_hash, user_id, client_address, created_at, last_seen_at, expires_at)
    values (${newId()}, ${hash}, ${userId}, ${client}, ${sqlDate(db, now)}, ${sqlDate(db, now)}, ${sqlDate(db, new Date(now.getTime() + settings.sessionMaxMs))})`);
  await sqlRun(db, sql`update users set last_seen_at = ${sqlDate(db, now)} where id = ${userId}`);
  return { token, maxAgeSeconds: Math.floor(settings.sessionMaxMs / 1000) };
}

/** The user of a live session (neither idle too long nor past its end), or null. */
export async function sessionUser(db: SqlScope, token: string, settings: PeopleSettings): Promise<AuthUser | null> {
  const now = new Date();
  const rows = await sqlRows<SessionRow>(db,
    sql`select s.id as session_id, s.user_id, u.username, s.last_seen_at, m.entity, m.role
       from sessions s
       join users u on u.id = s.user_id
       left join memberships m on m.user_id = u.id
      where s.token_hash = ${hashToken(token)} and s.expires_at > ${sqlDate(db, now)}
        and s.last_seen_at > ${sqlDate(db, new Date(now.getTime() - settings.sessionIdleMs))}`);
  const first = rows[0];
  if (!first) return null;
  if (now.getTime() - dateFromSql(first.last_seen_at).getTime() > TOUCH_AFTER_MS) {
    await sqlRun(db, sql`update sessions set last_seen_at = ${sqlDate(db, now)} where id = ${first.session_id}`);
    await sqlRun(db, sql`update users set last_seen_at = ${sqlDate(db, now)} where id = ${first.user_id}`);
  }
  const roles = new Map<string, Role>();
  for (const row of rows) if (row.entity && row.role) roles.set(row.entity, row.role);
  return { id: first.user_id, username: first.username, keyId: `session:${first.session_id}`, via: 'session', roles };
}

/** Ends the session of a token; whether there was one. */
export async function endSession(db: SqlScope, token: string): Promise<boolean> {
  return (await sqlRun(db, sql`delete from sessions where token_hash = ${hashToken(token)}`)) > 0;
}

/** Ends every session of a user at once (a password change, removal from the last entity). */
export async function endSessionsOf(db: SqlScope, userId: string): Promise<void> {
  await sqlRun(db, sql`delete from sessions where user_id = ${userId}`);
}
