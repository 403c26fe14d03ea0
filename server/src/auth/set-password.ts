import { sqlRows, sqlRun, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { entitiesOfUser, recordAudit } from '../domain/audit-log.ts';
import { notFound } from '../domain/errors.ts';
import { checkNewPassword, hashPassword } from './passwords.ts';
import { endSessionsOf } from './sessions.ts';

/**
 * Sets a user's password (`admin users set-password`, contract 5.12): checked (12 characters at
 * least, not a common one), stored as an argon2id hash; every session of the user ends at once.
 */
export async function setPassword(db: SqlScope, { username, password }: { username: string; password: string }): Promise<{ user_id: string; username: string }> {
  await checkNewPassword(password);
  const hash = await hashPassword(password); // before the transaction: no connection is held for the time of a hash
  return sqlTransaction(db, async (tx) => {
    const [user] = await sqlRows<{ id: string }>(tx, sql`select id from users where username = ${username}`);
    if (!user) throw notFound(`There is no user named "${username}".`);
    await sqlRun(tx, sql`update users set password_hash = ${hash} where id = ${user.id}`);
    await endSessionsOf(tx, user.id);
    await recordAudit(tx, await entitiesOfUser(tx, user.id), { action: 'password_set', actor: null, subjectUserId: user.id, client: null });
    return { user_id: user.id, username };
  });
}
