import type { IncomingMessage } from 'node:http';
import type { AuthUser } from '../domain/auth-user.ts';

// What the HTTP layer decided about a request before its body was read, kept on the request for
// the context of its procedure: the user it admitted, or why it refused the caller.

const USER = Symbol('loupe.user');
const REFUSED = Symbol('loupe.refused');
type Admitted = IncomingMessage & { [USER]?: AuthUser; [REFUSED]?: unknown };

export function admit(req: IncomingMessage, user: AuthUser): void {
  (req as Admitted)[USER] = user;
}

export function refuse(req: IncomingMessage, error: unknown): void {
  (req as Admitted)[REFUSED] = error;
}

/** The user a request was admitted as (set before its body was read), if its route needs one. */
export function admittedUser(req: IncomingMessage): AuthUser | undefined {
  return (req as Admitted)[USER];
}

/**
 * Why a typed-door request was refused before its body was read (401, 429, 503). Its answer must
 * be in tRPC's own envelope, which its clients read: the procedure throws this error unread.
 */
export function refusalOf(req: IncomingMessage): unknown {
  return (req as Admitted)[REFUSED];
}
