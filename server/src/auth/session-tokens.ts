import { randomBytes } from 'node:crypto';
import { hashApiKey } from './api-keys.ts';

/** The cookie that carries a session's token (contract 5.12). */
export const SESSION_COOKIE = 'loupe_session';

/**
 * A new random token (256 bits) for a session or an invitation, shown once; only its SHA-256 is
 * stored, so a request costs one indexed read, never a slow hash (the token is high-entropy).
 */
export function generateToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token) };
}

export const hashToken = hashApiKey;

/** The session token of a Cookie header, or null. */
export function sessionTokenOf(cookieHeader: string | undefined): string | null {
  if (!cookieHeader) return null;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{1,128}$/.test(value) ? value : null;
    }
  }
  return null;
}

/** The Set-Cookie value of a session: HttpOnly, SameSite=Lax, Path=/, Secure when asked; no Max-Age deletes it. */
export function sessionCookie(token: string, { secure, maxAgeSeconds }: { secure: boolean; maxAgeSeconds: number }): string {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure ? '; Secure' : ''}`;
}
