import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

// The state of one single sign-on attempt, between GET /auth/oidc/start and the provider sending
// the person back to GET /auth/oidc/callback: kept in the browser, in a short-lived HttpOnly cookie
// sealed (AES-256-GCM) under a key derived from the server secret. Not in the database: starting
// an attempt is anonymous, so a table of attempts would be one any client could fill; and every
// server process derives the same key (LOUPE_SECRET, or the one kept in the database), so behind a
// balancer the process the provider returns to opens what another sealed. The attempt's expiry is
// sealed with it: an old cookie kept past its Max-Age is refused all the same.

export const STATE_COOKIE = 'loupe_oidc';
/** The cookie is sent to the callback only. */
export const STATE_COOKIE_PATH = '/auth/oidc';
/** How long a person has at the provider's sign-in page. */
export const STATE_LIFETIME_MS = 10 * 60_000;
/** A sealed state is a few hundred bytes; anything far longer is no cookie of ours. */
const MAX_SEALED = 4096;
const VERSION = 'v1';

export type OidcAttempt = {
  /** PKCE code verifier (its S256 challenge went to the provider). */
  verifier: string;
  state: string;
  nonce: string;
  /** The redirect URI the provider was given; the code is redeemed with the same. */
  redirectUri: string;
  /** Where in the web app to land after signing in (a path under /app/). */
  returnTo: string;
  /** Epoch milliseconds after which the attempt is refused. */
  expiresAt: number;
};

export class OidcStateSeal {
  readonly #key: Buffer;

  constructor(serverSecret: string) {
    this.#key = Buffer.from(hkdfSync('sha256', serverSecret, 'loupe', 'oidc sign-in state v1', 32));
  }

  seal(attempt: OidcAttempt): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(attempt), 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')}`;
  }

  /** The attempt of a sealed value, or null: not ours (tampered, another secret, malformed) or expired. */
  open(sealed: string, now = Date.now()): OidcAttempt | null {
    if (sealed.length > MAX_SEALED || !sealed.startsWith(`${VERSION}.`)) return null;
    const bytes = Buffer.from(sealed.slice(VERSION.length + 1), 'base64url');
    if (bytes.length < 29) return null;
    let attempt: OidcAttempt;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, bytes.subarray(0, 12));
      decipher.setAuthTag(bytes.subarray(12, 28));
      attempt = JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')) as OidcAttempt;
    } catch {
      return null;
    }
    return typeof attempt.expiresAt === 'number' && attempt.expiresAt > now ? attempt : null;
  }
}

/** The sealed state of a Cookie header, or null. */
export function stateCookieOf(cookieHeader: string | undefined): string | null {
  if (!cookieHeader) return null;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === STATE_COOKIE) return part.slice(eq + 1).trim();
  }
  return null;
}

/**
 * Set-Cookie of an attempt: HttpOnly, SameSite=Lax (the provider's redirect back is a top-level
 * GET, which Lax lets the cookie ride along), Path=/auth/oidc, ten minutes.
 */
export function stateCookie(sealed: string, secure: boolean): string {
  return `${STATE_COOKIE}=${sealed}; Path=${STATE_COOKIE_PATH}; HttpOnly; SameSite=Lax; Max-Age=${STATE_LIFETIME_MS / 1000}${secure ? '; Secure' : ''}`;
}

export function clearedStateCookie(secure: boolean): string {
  return `${STATE_COOKIE}=; Path=${STATE_COOKIE_PATH}; HttpOnly; SameSite=Lax; Max-Age=0${secure ? '; Secure' : ''}`;
}
