import type { IncomingMessage } from 'node:http';
import type { PeopleSettings } from '../config.ts';
import type { SqlScope } from '../db/sql.ts';
import type { AuthUser } from '../domain/auth-user.ts';
import { forbidden } from '../domain/errors.ts';
import { isCrossSite } from './cross-site.ts';
import { sessionTokenOf } from './session-tokens.ts';
import { sessionUser } from './sessions.ts';

/**
 * The user of a request's session cookie, or undefined (no cookie, or a session that has ended:
 * the caller answers 401, not counted by the brake, since an old cookie is no guess). A write
 * with the cookie must come from Loupe's own origin: 403 "cross-site request refused" otherwise.
 */
export async function cookieUser(db: SqlScope, req: IncomingMessage, settings: PeopleSettings): Promise<AuthUser | undefined> {
  const token = sessionTokenOf(req.headers.cookie);
  if (token === null) return undefined;
  const user = await sessionUser(db, token, settings);
  if (!user) return undefined;
  if (isCrossSite(req, settings.publicUrl)) throw forbidden('cross-site request refused');
  return user;
}
