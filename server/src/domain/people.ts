import type { Me, Role } from '@loupe/shared';
import { sqlRows, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';

/** A user as the sign-in answers show them: id, name, memberships. */
export async function meOf(db: SqlScope, user: { id: string; username: string }): Promise<Me> {
  const rows = await sqlRows<{ entity: string; role: Role }>(db, sql`select entity, role from memberships where user_id = ${user.id} order by entity`);
  return { user_id: user.id, username: user.username, memberships: rows.map((row) => ({ entity: row.entity, role: row.role })) };
}
