import { randomBytes } from 'node:crypto';
import { ServerSecret } from './entities.ts';
import { unitOfWork, type Orm } from './orm.ts';

/** The row of the key that cursors are sealed under. */
const CURSOR_SECRET = 'cursor_seal';

/**
 * The server's secret: LOUPE_SECRET when it is set, else the one kept in the database, which the
 * first process to start makes (32 random bytes, base64url). Processes starting at once each
 * insert theirs only if none is there, then all read the one that won: every process on one
 * database, and every restart, share it.
 */
export async function serverSecret(orm: Orm, configured: string | undefined): Promise<string> {
  if (configured !== undefined) return configured;
  const em = unitOfWork(orm);
  await em
    .createQueryBuilder(ServerSecret)
    .insert({ name: CURSOR_SECRET, value: randomBytes(32).toString('base64url'), createdAt: new Date() })
    .onConflict('name')
    .ignore()
    .execute();
  const row = await em.findOneOrFail(ServerSecret, { name: CURSOR_SECRET });
  return row.value;
}
