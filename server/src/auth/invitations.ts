import type { AcceptInvitationReq, Invitation, InvitationCreateReq, Me, Role } from '@loupe/shared';
import { checkNewPassword, hashPassword } from './passwords.ts';
import { generateToken, hashToken } from './session-tokens.ts';
import { startSession } from './sessions.ts';
import type { PeopleSettings } from '../config.ts';
import { isoFromSql, isoOrNullFromSql, dateFromSql, lockClause, sqlDate, sqlRows, sqlRun, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { recordAudit, type Actor } from '../domain/audit-log.ts';
import { conflict, invalid, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { meOf } from '../domain/people.ts';

// Invitations (contract 5.12): an entity admin makes one for a role; its token is in the link only
// (shown once) and stored as a SHA-256; accepting it once makes the membership (and the user).

const DEFAULT_HOURS = 168;

type InvitationRow = {
  id: string;
  entity: string;
  role: Role;
  email: string | null;
  created_by: string;
  created_at: unknown;
  expires_at: unknown;
  revoked_at: unknown;
  accepted_at: unknown;
  accepted_by: string | null;
};

const COLUMNS = sql`id, entity, role, email, created_by, created_at, expires_at, revoked_at, accepted_at, accepted_by`;

function stateOf(row: InvitationRow, now: Date): Invitation['state'] {
  if (row.accepted_at !== null) return 'accepted';
  if (row.revoked_at !== null) return 'revoked';
  return dateFromSql(row.expires_at) <= now ? 'expired' : 'pending';
}

function toDto(row: InvitationRow, now = new Date()): Invitation {
  return {
    id: row.id,
    entity: row.entity,
    role: row.role,
    email: row.email,
    state: stateOf(row, now),
    created_by: row.created_by,
    created_at: isoFromSql(row.created_at),
    expires_at: isoFromSql(row.expires_at),
    accepted_by: row.accepted_by,
    accepted_at: isoOrNullFromSql(row.accepted_at),
    revoked_at: isoOrNullFromSql(row.revoked_at),
  };
}

/** The link that accepts an invitation: the web app's page, the token in the fragment (never sent to a server, so in no log). */
function acceptUrl(baseUrl: string, token: string): string {
  return `${baseUrl}/app/accept-invitation#token=${token}`;
}

export async function createInvitation(
  db: SqlScope,
  { req, actor, client, baseUrl }: { req: InvitationCreateReq; actor: NonNullable<Actor>; client: string | null; baseUrl: string },
): Promise<Invitation & { url: string }> {
  const now = new Date();
  const { token, hash } = generateToken();
  const id = newId();
  const expires = new Date(now.getTime() + (req.expires_in_hours ?? DEFAULT_HOURS) * 3_600_000);
  return sqlTransaction(db, async (tx) => {
    await sqlRun(tx, sql`insert into invitations (id, entity, role, token_hash, email, created_by, created_at, expires_at)
      values (${id}, ${req.entity}, ${req.role}, ${hash}, ${req.email ?? null}, ${actor.userId}, ${sqlDate(tx, now)}, ${sqlDate(tx, expires)})`);
    await recordAudit(tx, [req.entity], { action: 'invitation_created', actor, client, detail: { invitation_id: id, role: req.role, email: req.email ?? null } });
    const [row] = await sqlRows<InvitationRow>(tx, sql`select ${COLUMNS} from invitations where id = ${id}`);
    return { ...toDto(row!, now), url: acceptUrl(baseUrl, token) };
  });
}

/** An entity's invitations, newest first (no tokens: they are not kept). */
export async function queryInvitations(db: SqlScope, entity: string): Promise<Invitation[]> {
  const rows = await sqlRows<InvitationRow>(db, sql`select ${COLUMNS} from invitations where entity = ${entity} order by created_at desc, id desc limit 1000`);
  const now = new Date();
  return rows.map((row) => toDto(row, now));
}

/** Revokes a pending invitation; one already accepted cannot be (400), one revoked stays as it is. */
export async function revokeInvitation(db: SqlScope, { entity, id, actor, client }: { entity: string; id: string; actor: NonNullable<Actor>; client: string | null }): Promise<Invitation> {
  return sqlTransaction(db, async (tx) => {
    const [row] = await sqlRows<InvitationRow>(tx, sql`select ${COLUMNS} from invitations where id = ${id} and entity = ${entity}${lockClause(tx, 'for update')}`);
    if (!row) throw notFound(`Invitation "${id}" does not exist in entity "${entity}".`);
    if (row.accepted_at !== null) throw invalid('This invitation has already been used; remove the member instead.');
    if (row.revoked_at === null) {
      const now = new Date();
      await sqlRun(tx, sql`update invitations set revoked_at = ${sqlDate(tx, now)}, revoked_by = ${actor.userId} where id = ${id}`);
      await recordAudit(tx, [entity], { action: 'invitation_revoked', actor, client, detail: { invitation_id: id, role: row.role } });
    }
    const [after] = await sqlRows<InvitationRow>(tx, sql`select ${COLUMNS} from invitations where id = ${id}`);
    return toDto(after!);
  });
}

type Accept = { req: AcceptInvitationReq; signedIn: { id: string; username: string } | null; client: string | null; settings: PeopleSettings };

/**
 * Accepts an invitation (contract 5.12): with a username and password, a new user; with the token
 * alone, the signed-in user joins the entity. Either way a session starts. Single use: the
 * invitation is marked used in the transaction that makes the membership, by a compare-and-set,
 * so two acceptances at once cannot both succeed.
 */
export async function acceptInvitation(db: SqlScope, { req, signedIn, client, settings }: Accept): Promise<{ user: Me; token: string; maxAgeSeconds: number }> {
  const newAccount = req.username !== undefined || req.password !== undefined;
  if (newAccount && (req.username === undefined || req.password === undefined)) throw invalid('A new account needs both username and password.');
  if (!newAccount && !signedIn) throw invalid('Sign in first, or give a username and password for a new account.');
  if (req.username === 'api') throw invalid('The username "api" is reserved.');
  if (req.password !== undefined) await checkNewPassword(req.password);
  // Hashed before the transaction: SQLite's one connection is not held for the time of a hash.
  const passwordHash = req.password !== undefined ? await hashPassword(req.password) : null;
  const now = new Date();
  return sqlTransaction(db, async (tx) => {
    const [row] = await sqlRows<InvitationRow>(tx, sql`select ${COLUMNS} from invitations where token_hash = ${hashToken(req.token)}${lockClause(tx, 'for update')}`);
    if (!row) throw invalid('This invitation link is not valid.');
    const state = stateOf(row, now);
    if (state === 'accepted') throw invalid('This invitation has already been used.');
    if (state === 'revoked') throw invalid('This invitation has been revoked.');
    if (state === 'expired') throw invalid('This invitation has expired.');

    let user: { id: string; username: string };
    if (newAccount) {
      user = { id: newId(), username: req.username! };
      // `on conflict`, not a look first: two acceptances of different invitations choosing one new
      // name at once would both find it free, and the second insert fail on the unique index.
      const [made] = await sqlRows<{ id: string }>(tx,
        sql`insert into users (id, username, password_hash, created_at) values (${user.id}, ${user.username}, ${passwordHash}, ${sqlDate(tx, now)})
          on conflict (username) do nothing returning id`);
      if (!made) throw conflict(`The username "${req.username}" is taken; choose another.`);
    } else {
      user = signedIn!;
      const [member] = await sqlRows<{ role: Role }>(tx, sql`select role from memberships where user_id = ${user.id} and entity = ${row.entity}`);
      if (member) throw invalid(`You are already a member of entity "${row.entity}" (as ${member.role}).`);
    }
    const marked = await sqlRun(tx, sql`update invitations set accepted_at = ${sqlDate(tx, now)}, accepted_by = ${user.id}
      where id = ${row.id} and accepted_at is null and revoked_at is null`);
    if (marked !== 1) throw invalid('This invitation has already been used.');
    await sqlRun(tx, sql`insert into memberships (user_id, entity, role, created_at) values (${user.id}, ${row.entity}, ${row.role}, ${sqlDate(tx, now)})`);
    await recordAudit(tx, [row.entity], { action: 'invitation_accepted', actor: { userId: user.id, username: user.username }, client, detail: { invitation_id: row.id, role: row.role, new_user: newAccount } });
    const session = await startSession(tx, { userId: user.id, client, settings });
    return { user: await meOf(tx, user), ...session };
  });
}
