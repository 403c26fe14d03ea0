import type { Member, Role } from '@loupe/shared';
import { endSessionsOf } from './sessions.ts';
import { isoFromSql, isoOrNullFromSql, lockClause, sqlRows, sqlRun, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { recordAudit, type Actor } from '../domain/audit-log.ts';
import { forbidden, invalid, notFound } from '../domain/errors.ts';

// The members of an entity (contract 5.12): any member lists them; admins change roles and remove
// members; the last admin stays. Changes of one entity are serialised by a lock on its row
// (PostgreSQL; SQLite serialises every transaction), so two admins demoting each other at once
// cannot leave the entity without one; under the lock the actor must still be an admin, so the
// second of the two gets the same 403 on both databases (its credentials were read before the
// first one's commit).

type MemberRow = { user_id: string; username: string; role: Role; created_at: unknown; last_seen_at: unknown };

const toDto = (row: MemberRow): Member => ({
  user_id: row.user_id,
  username: row.username,
  role: row.role,
  created_at: isoFromSql(row.created_at),
  last_seen_at: isoOrNullFromSql(row.last_seen_at),
});

const SELECT = sql`select m.user_id, u.username, m.role, m.created_at, u.last_seen_at from memberships m join users u on u.id = m.user_id`;

/**
 * The members of an entity, by username. An annotator, blind to other annotators (contract 5.11),
 * sees the admins, members and viewers, and themselves among the annotators.
 */
export async function queryMembers(db: SqlScope, { entity, caller }: { entity: string; caller: { id: string; role: Role } }): Promise<Member[]> {
  const blind = caller.role === 'annotator' ? sql` and (m.role <> 'annotator' or m.user_id = ${caller.id})` : sql``;
  return (await sqlRows<MemberRow>(db, sql`${SELECT} where m.entity = ${entity}${blind} order by u.username`)).map(toDto);
}

type Change = { entity: string; userId: string; actor: NonNullable<Actor>; client: string | null };

async function lockedMember(tx: SqlScope, { entity, userId, actor }: Change): Promise<MemberRow> {
  await sqlRows(tx, sql`select name from entities where name = ${entity}${lockClause(tx, 'for update')}`);
  const [own] = await sqlRows<{ role: Role }>(tx, sql`select role from memberships where entity = ${entity} and user_id = ${actor.userId}`);
  if (own?.role !== 'admin') throw forbidden(`Your role in entity "${entity}" is ${own?.role ?? 'none'}; only its admins may do this.`);
  const [row] = await sqlRows<MemberRow>(tx, sql`${SELECT} where m.entity = ${entity} and m.user_id = ${userId}`);
  if (!row) throw notFound(`User "${userId}" is not a member of entity "${entity}".`);
  return row;
}

async function requireAnotherAdmin(tx: SqlScope, entity: string, doing: string): Promise<void> {
  const [count] = await sqlRows<{ n: number | string }>(tx, sql`select count(*) as n from memberships where entity = ${entity} and role = 'admin'`);
  if (Number(count!.n) <= 1) throw invalid(`The last admin of entity "${entity}" cannot be ${doing}; make another member admin first.`);
}

export async function updateMemberRole(db: SqlScope, { role, ...change }: Change & { role: Role }): Promise<Member> {
  return sqlTransaction(db, async (tx) => {
    const member = await lockedMember(tx, change);
    if (member.role === role) return toDto(member);
    if (member.role === 'admin') await requireAnotherAdmin(tx, change.entity, 'demoted');
    await sqlRun(tx, sql`update memberships set role = ${role} where entity = ${change.entity} and user_id = ${change.userId}`);
    await recordAudit(tx, [change.entity], { action: 'member_role_changed', actor: change.actor, subjectUserId: change.userId, client: change.client, detail: { from: member.role, to: role } });
    return toDto({ ...member, role });
  });
}

/** Removes a member; a user left in no entity has every session ended at once. */
export async function removeMember(db: SqlScope, change: Change): Promise<Member> {
  return sqlTransaction(db, async (tx) => {
    const member = await lockedMember(tx, change);
    if (member.role === 'admin') await requireAnotherAdmin(tx, change.entity, 'removed');
    await sqlRun(tx, sql`delete from memberships where entity = ${change.entity} and user_id = ${change.userId}`);
    const [left] = await sqlRows<{ n: number | string }>(tx, sql`select count(*) as n from memberships where user_id = ${change.userId}`);
    if (Number(left!.n) === 0) await endSessionsOf(tx, change.userId);
    await recordAudit(tx, [change.entity], { action: 'member_removed', actor: change.actor, subjectUserId: change.userId, client: change.client, detail: { role: member.role } });
    return toDto(member);
  });
}
