import type { IncomingMessage } from 'node:http';
import { clearedSessionCookie, sessionCookie } from '../auth/session-tokens.ts';
import type { Actor } from '../domain/audit-log.ts';
import type { AuthUser } from '../domain/auth-user.ts';
import type { Context } from './context.ts';

// What the people procedures read of their HTTP request (client address, scheme, host) and write
// on their answer (the session cookie). Both doors pass Express's request and response.

type ExpressRequest = IncomingMessage & { ip?: string; secure?: boolean; protocol?: string };

const requestOf = (ctx: Context) => ctx.res.req as ExpressRequest;

export function requestOfContext(ctx: Context): IncomingMessage {
  return requestOf(ctx);
}

/** The client's address as the brake and the audit log see it (X-Forwarded-For per LOUPE_TRUST_PROXY). */
export function clientAddress(ctx: Context): string {
  const req = requestOf(ctx);
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}

export function actorOf(user: AuthUser): NonNullable<Actor> {
  return { userId: user.id, username: user.username };
}

/** The cookie is Secure when the request came over HTTPS or LOUPE_COOKIE_SECURE=true. */
function secure(ctx: Context): boolean {
  return ctx.services.config.people.cookieSecure || requestOf(ctx).secure === true;
}

export function setSessionCookie(ctx: Context, session: { token: string; maxAgeSeconds: number }): void {
  ctx.res.setHeader('Set-Cookie', sessionCookie(session.token, { secure: secure(ctx), maxAgeSeconds: session.maxAgeSeconds }));
}

export function clearSessionCookie(ctx: Context): void {
  ctx.res.setHeader('Set-Cookie', clearedSessionCookie(secure(ctx)));
}

/** Where links to this server point: LOUPE_PUBLIC_URL, else the request's own scheme and host. */
export function publicBaseUrl(ctx: Context): string {
  const configured = ctx.services.config.people.publicUrl;
  if (configured) return configured;
  const req = requestOf(ctx);
  return `${req.protocol ?? 'http'}://${req.headers.host ?? 'localhost'}`;
}
