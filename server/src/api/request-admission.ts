import type { IncomingMessage } from 'node:http';
import type { AuthUser } from '../domain/auth-user.ts';
import type { HeapHold } from '../domain/heap-budget.ts';

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

/** Whom the heap a request takes is charged to (HeapBudget's accounts): its client address, and its key. */
export function heapAccountsOf(req: IncomingMessage & { ip?: string | undefined }): string[] {
  const accounts = [`address ${req.ip ?? req.socket.remoteAddress ?? 'unknown'}`];
  const user = admittedUser(req);
  if (user) accounts.push(`key ${user.keyId}`);
  return accounts;
}

const BODY_HOLD = Symbol('loupe.bodyHold');
type Holding = IncomingMessage & { [BODY_HOLD]?: HeapHold };

/** The heap the request's body holds while the request is handled (http/body.ts). */
export function keepBodyHold(req: IncomingMessage, hold: HeapHold): void {
  (req as Holding)[BODY_HOLD] = hold;
}

/** The heap the request's body holds, to grow it once more of what it will take is known (an OTLP protobuf body, once scanned). */
export function bodyHoldOf(req: IncomingMessage): HeapHold | undefined {
  return (req as Holding)[BODY_HOLD];
}

/**
 * Gives back the heap the request's body holds, once its procedure makes an answer that takes its
 * own: the body (a query's input) is read by then, and the answer, charged to the same accounts,
 * must not wait behind it.
 */
export function releaseBodyHold(req: IncomingMessage): void {
  (req as Holding)[BODY_HOLD]?.release();
}
