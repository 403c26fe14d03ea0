import type { Me, SignInReq } from '@loupe/shared';
import type { AuthBrake } from './brake.ts';
import { passwordMatches } from './passwords.ts';
import { startSession } from './sessions.ts';
import type { PeopleSettings } from '../config.ts';
import { sqlRows, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { entitiesOfUser, recordAudit } from '../domain/audit-log.ts';
import { DomainError, forbidden } from '../domain/errors.ts';
import { meOf } from '../domain/people.ts';

/** The one answer to a wrong password, an unknown user and a user without a password alike. */
export const SIGN_IN_REFUSED = 'The username or the password is wrong.';
const BRAKED = 'Too many failed sign-ins from this client or for this username; retry later.';
/** A braked try is told to wait out the brake's window. */
const BRAKE_WINDOW_SECONDS = 60;

type SignIn = { req: SignInReq; client: string; settings: PeopleSettings; brake: AuthBrake };

/**
 * Password sign-in (contract 5.12). The brake counts failures per client and per username: either
 * over the limit refuses further tries (429) before a password is hashed. A known and an unknown
 * username cost one password hash each and get the same 401. Returns the user and a new session
 * (a new token at every sign-in: a session id planted before it is never the one that carries it).
 */
export async function signIn(db: SqlScope, { req, client, settings, brake }: SignIn): Promise<{ user: Me; token: string; maxAgeSeconds: number }> {
  if (!settings.passwordSignIn) throw forbidden('Password sign-in is turned off on this server; sign in with single sign-on.');
  const keys = [`sign-in client ${client}`, `sign-in user ${req.username.toLowerCase()}`];
  for (const key of keys) if (await brake.isBraked(key)) throw new DomainError('rate_limited', BRAKED, BRAKE_WINDOW_SECONDS);

  const [user] = await sqlRows<{ id: string; username: string; password_hash: string | null }>(db,
    sql`select id, username, password_hash from users where username = ${req.username}`);
  // Hashed outside any transaction: SQLite's one connection is not held for the time of a hash.
  const matches = await passwordMatches(req.password, user?.password_hash ?? null);
  if (!user || !matches) {
    const waits = await Promise.all(keys.map((key) => brake.recordFailure(key)));
    await recordAudit(db, user ? await entitiesOfUser(db, user.id) : [], {
      action: 'sign_in_failed',
      actor: null,
      subjectUserId: user?.id ?? null,
      detail: { username: req.username.slice(0, 128) },
      client,
    });
    const wait = Math.max(...waits);
    if (wait > 0) throw new DomainError('rate_limited', BRAKED, wait);
    throw new DomainError('unauthenticated', SIGN_IN_REFUSED);
  }
  return sqlTransaction(db, async (tx) => {
    const session = await startSession(tx, { userId: user.id, client, settings });
    await recordAudit(tx, await entitiesOfUser(tx, user.id), { action: 'sign_in', actor: { userId: user.id, username: user.username }, client });
    return { user: await meOf(tx, user), ...session };
  });
}
