import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Services } from '../api/services.ts';
import { OidcRefusal, type OidcIdentity } from '../auth/oidc-client.ts';
import { recordSignOnFailure, signOn } from '../auth/oidc-sign-in.ts';
import { clearedStateCookie, stateCookie, stateCookieOf } from '../auth/oidc-state.ts';
import { sessionCookie, sessionTokenOf } from '../auth/session-tokens.ts';
import { endSession } from '../auth/sessions.ts';
import { requestLog } from '../log.ts';
import { PAGE_HEADERS } from './page-headers.ts';

// Single sign-on's two browser routes (contract 5.12): GET /auth/oidc/start sends the person to
// the provider, GET /auth/oidc/callback is where the provider sends them back. They answer
// browsers, not programs: redirects, and a short readable page (4xx, 502) when an attempt ends
// without a sign-in.

export const OIDC_START_PATH = '/auth/oidc/start';
export const OIDC_CALLBACK_PATH = '/auth/oidc/callback';
/** A callback's URL is a code, a state and a few short parameters: far below this. */
const MAX_URL = 4096;
const APP = '/app/';
/** The brake key of failed sign-ins from a client: the one password sign-in counts too. */
const brakeKey = (client: string) => `sign-in client ${client}`;

export function oidcRoutes(services: Services) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const path = req.path.replace(/\/$/, '');
    if (path !== OIDC_START_PATH && path !== OIDC_CALLBACK_PATH) return next();
    try {
      if (!services.singleSignOn) return page(res, 404, 'Single sign-on is not configured on this server.');
      if (req.originalUrl.length > MAX_URL) return page(res, 414, 'The address is too long for a sign-in; start again.');
      // A HEAD (a link checker, a prefetch) never redeems a code: only the browser's GET does.
      if (path === OIDC_CALLBACK_PATH && req.method !== 'GET') return page(res, 405, 'The provider sends the browser back here with a GET.', { Allow: 'GET' });
      if (path === OIDC_START_PATH) await start(services, req, res);
      else await callback(services, req, res);
    } catch (error) {
      next(error);
    }
  };
}

async function start(services: Services, req: Request, res: Response): Promise<void> {
  const sso = services.singleSignOn!;
  const returnTo = appPath(req.query.return_to);
  try {
    const { url, attempt } = await sso.client.start({ redirectUri: `${baseUrl(services, req)}${OIDC_CALLBACK_PATH}`, returnTo });
    res.setHeader('Set-Cookie', stateCookie(sso.seal.seal(attempt), secure(services, req)));
    redirect(res, url);
  } catch (error) {
    if (!(error instanceof OidcRefusal)) throw error;
    requestLog(req)?.warn({ err: error.cause ?? error }, 'single sign-on: provider unavailable');
    page(res, error.status, error.message);
  }
}

async function callback(services: Services, req: Request, res: Response): Promise<void> {
  const sso = services.singleSignOn!;
  const oidc = services.config.people.oidc!;
  const client = clientOf(req);
  const isSecure = secure(services, req);
  // The attempt's cookie is used once, whatever happens: a second try starts again.
  res.setHeader('Set-Cookie', clearedStateCookie(isSecure));
  let identity: OidcIdentity | undefined;
  try {
    if (await services.authFailures.isBraked(brakeKey(client))) {
      return page(res, 429, 'Too many failed sign-ins from this client; retry in a minute.', { 'Retry-After': '60' });
    }
    const sealed = stateCookieOf(req.headers.cookie);
    const attempt = sealed === null ? null : sso.seal.open(sealed);
    if (!attempt) throw new OidcRefusal(400, 'This sign-in attempt has expired or was not started in this browser; start again.');
    const search = new URL(req.originalUrl, 'http://callback').searchParams;
    // Checked before the provider is asked anything (openid-client checks it again).
    if (search.get('state') !== attempt.state) throw new OidcRefusal(400, 'This sign-in answer does not belong to the attempt started in this browser (state); start again.');
    identity = await sso.client.finish(attempt, search);
    const signedIn = await signOn(services.orm.em, { identity, people: services.config.people, oidc, client });
    // A session the browser carried (perhaps planted) ends: the new one has a new token.
    const previous = sessionTokenOf(req.headers.cookie);
    if (previous !== null) await endSession(services.orm.em, previous);
    res.setHeader('Set-Cookie', [clearedStateCookie(isSecure), sessionCookie(signedIn.token, { secure: isSecure, maxAgeSeconds: signedIn.maxAgeSeconds })]);
    requestLog(req)?.info({ user_id: signedIn.userId }, 'single sign-on: signed in');
    redirect(res, attempt.returnTo);
  } catch (error) {
    if (!(error instanceof OidcRefusal)) throw error;
    // A provider that could not be reached is no guess at anything: not braked.
    if (error.status !== 502) await services.authFailures.recordFailure(brakeKey(client));
    await recordSignOnFailure(services.orm.em, { oidc, identity, reason: error.message, client });
    const log = requestLog(req);
    if (error.status === 502) log?.warn({ err: error.cause ?? error }, 'single sign-on: provider unavailable');
    else log?.info({ status: error.status, reason: error.message }, 'single sign-on refused');
    page(res, error.status, error.message);
  }
}

/** A path under /app/ to land on, else /app/ (never another site, nor `//host`). */
function appPath(value: unknown): string {
  if (typeof value !== 'string' || value.length > 512 || !value.startsWith(APP) || /[\\\s]|\/\//.test(value)) return APP;
  return value;
}

function baseUrl(services: Services, req: Request): string {
  const configured = services.config.people.publicUrl;
  if (configured) return configured;
  const host = req.headers.host;
  return `${req.protocol}://${host && /^[A-Za-z0-9.:[\]-]{1,300}$/.test(host) ? host : 'localhost'}`;
}

const clientOf = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';
const secure = (services: Services, req: Request) => services.config.people.cookieSecure || req.secure;

function redirect(res: Response, location: string): void {
  res.status(302);
  res.setHeader('Location', location);
  res.setHeader('Cache-Control', 'no-store');
  // The callback's address holds the code: it is sent on to no one.
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.end();
}

/**
 * The page's look, the web app's sign-in panel in its light and dark colours. Inline, and allowed
 * by its hash alone: the page's CSP is the web app's otherwise (no other inline style, no script).
 */
const STYLE = [
  ':root{color-scheme:light dark;--ink:#1d1f23;--line:#d4d8de;--paper:#fff;--wash:#f4f6f8;--accent:#1a5fb4;--focus:#e5a50a;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;color:var(--ink);background:var(--wash)}',
  '@media (prefers-color-scheme:dark){:root{--ink:#e6e8eb;--line:#3a3f47;--paper:#1f2227;--wash:#16181c;--accent:#8ab4f8;--focus:#f5c04a}}',
  'body{margin:0}main{max-width:28rem;margin:3rem auto;background:var(--paper);border:1px solid var(--line);border-radius:8px;padding:1.5rem}',
  '@media (max-width:30rem){main{margin:1rem}}h1{margin-top:0;font-size:1.6rem}a{color:var(--accent);font-weight:600}',
  ':focus-visible{outline:3px solid var(--focus);outline-offset:2px;box-shadow:0 0 0 5px var(--ink)}',
].join('');
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;
const PAGE_CSP = PAGE_HEADERS['Content-Security-Policy']!.replace("style-src 'self'", `style-src 'self' ${STYLE_HASH}`);

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** A short page saying why the sign-in did not happen, with a way back to the sign-in page. */
function page(res: Response, status: number, reason: string, headers: Record<string, string> = {}): void {
  for (const [name, value] of Object.entries({ ...PAGE_HEADERS, 'Content-Security-Policy': PAGE_CSP, ...headers })) res.setHeader(name, value);
  res.status(status);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.end(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><title>Sign-in failed — Loupe</title><style>${STYLE}</style></head>
<body>
<main>
<h1>Sign-in failed</h1>
<p id="reason">${escape(reason)}</p>
<p><a href="${APP}">Back to sign-in</a></p>
</main>
</body>
</html>
`);
}
