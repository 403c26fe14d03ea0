import { setPassword } from '@loupe/server';
import { expect } from 'vitest';
import { rest, type CallOptions, type Reply } from './http.ts';
import type { TestServer } from './server.ts';

// People in tests (contract 5.12): a password set the way the admin tool sets it, sign-in through
// real HTTP, and requests that carry the session cookie as a browser on Loupe's own page would
// (Cookie, and Origin on writes).

export async function givePassword(server: TestServer, username: string, password: string): Promise<void> {
  await setPassword(server.server.services.orm.em, { username, password });
}

/** The `loupe_session=...` pair of an answer's Set-Cookie, or undefined. */
export function sessionCookieOf(reply: Reply): string | undefined {
  const header = reply.headers.get('set-cookie');
  const match = header?.match(/(?:^|,\s*)(loupe_session=[^;]*)/);
  return match?.[1];
}

/** Signs in; the reply and the cookie to send back. */
export async function signIn(server: TestServer, username: string, password: string, headers: Record<string, string> = {}): Promise<{ reply: Reply; cookie: string }> {
  const reply = await rest(server, 'POST', '/auth/sign-in', { body: { username, password }, headers });
  expect(reply.status, reply.text).toBe(200);
  const cookie = sessionCookieOf(reply);
  expect(cookie).toMatch(/^loupe_session=[A-Za-z0-9_-]{40,}$/);
  return { reply, cookie: cookie! };
}

/**
 * A request with the session cookie, from Loupe's own origin unless `headers` says otherwise (a
 * header given as undefined is not sent: `{origin: undefined}` sends no Origin).
 */
export function withCookie(server: TestServer, cookie: string, method: string, path: string, options: Omit<CallOptions, 'headers'> & { headers?: Record<string, string | undefined> } = {}): Promise<Reply> {
  const headers = Object.fromEntries(Object.entries({ cookie, origin: server.url, ...options.headers }).filter(([, value]) => value !== undefined)) as Record<string, string>;
  return rest(server, method, path, { ...options, headers });
}
