import { once } from 'node:events';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';

// A real OpenID Connect provider in the test process (oidc-provider, with its development login
// page: any login name, any password), and a browser's part of the flow over real HTTP: redirects
// followed by hand, a cookie jar per origin, the login form submitted.

export type TestAccount = { preferred_username?: string; email?: string; groups?: string[] | string };

export type TestProvider = {
  issuer: string;
  /** The people it knows, by login (their `sub`): a test may change one's claims between sign-ins. */
  accounts: Map<string, TestAccount>;
  /** Registers the clients (each with its own secret) redirecting to these URIs; done once the servers that use it listen. */
  register(clients: { client_id: string; client_secret: string; redirect_uris: string[] }[]): void;
  /**
   * The next answer of the token endpoint carries this ID token instead of its own: a genuine
   * token of the provider's, put where it does not belong (as an attacker in the middle would).
   */
  swapNextIdToken(idToken: string): void;
  close(): Promise<void>;
};

/** Listens first (its issuer URL has the port), so that a Loupe server can be given the issuer before the provider knows Loupe's address. */
export async function startTestProvider(): Promise<TestProvider> {
  let handler: RequestListener = (_req: IncomingMessage, res: ServerResponse) => {
    res.statusCode = 503;
    res.end('provider not ready');
  };
  const server = createServer((req, res) => handler(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, TestAccount>();
  let swap: string | undefined;
  return {
    issuer,
    accounts,
    register(clients) {
      const provider = new Provider(issuer, {
        clients: clients.map((client) => ({ ...client, grant_types: ['authorization_code'], response_types: ['code'] })),
        claims: { openid: ['sub'], profile: ['preferred_username', 'groups'], email: ['email'] },
        findAccount: (_ctx, sub) => {
          const account = accounts.get(sub);
          if (!account) return undefined;
          return { accountId: sub, claims: () => ({ sub, ...account }) };
        },
        // No consent page: the grant is made at once (a first-party client, as Loupe is at a company's provider).
        loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
          const { client, session, result } = ctx.oidc;
          const grantId = (result?.consent as { grantId?: string } | undefined)?.grantId ?? session?.grantIdFor(client!.clientId);
          if (grantId) return ctx.oidc.provider.Grant.find(grantId);
          const grant = new ctx.oidc.provider.Grant({ clientId: client!.clientId, accountId: session!.accountId! });
          grant.addOIDCScope('openid profile email');
          await grant.save();
          return grant;
        },
        features: { devInteractions: { enabled: true } },
        ttl: { Interaction: 600, Grant: 600, Session: 600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
        pkce: { required: () => true },
      });
      // A post-middleware (oidc-provider's provider.use) over the token endpoint's JSON answer.
      provider.use(async (ctx, next) => {
        await next();
        if (swap !== undefined && ctx.path === '/token' && ctx.status === 200) {
          ctx.body = { ...(ctx.body as object), id_token: swap };
          swap = undefined;
        }
      });
      handler = provider.callback();
    },
    swapNextIdToken(idToken) {
      swap = idToken;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Cookies per origin, as a browser keeps them (paths and expiry aside: one test's browser). */
export class CookieJar {
  readonly #byOrigin = new Map<string, Map<string, string>>();

  header(url: URL): string | undefined {
    const cookies = this.#byOrigin.get(url.origin);
    if (!cookies || cookies.size === 0) return undefined;
    return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  store(url: URL, response: Response): void {
    let cookies = this.#byOrigin.get(url.origin);
    if (!cookies) this.#byOrigin.set(url.origin, (cookies = new Map()));
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const deleted = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=thu, 01 jan 1970/i.test(a));
      if (deleted || value === '') cookies.delete(name);
      else cookies.set(name, value);
    }
  }

  get(origin: string, name: string): string | undefined {
    return this.#byOrigin.get(origin)?.get(name);
  }

  set(origin: string, name: string, value: string): void {
    let cookies = this.#byOrigin.get(origin);
    if (!cookies) this.#byOrigin.set(origin, (cookies = new Map()));
    cookies.set(name, value);
  }
}

/** One request as the browser would make it: the jar's cookies sent, the answer's kept, no redirect followed. */
export async function browserFetch(jar: CookieJar, url: URL, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const cookie = jar.header(url);
  if (cookie) headers.set('cookie', cookie);
  const response = await fetch(url, { ...init, headers, redirect: 'manual' });
  jar.store(url, response);
  return response;
}

/**
 * From Loupe's authorization redirect to the provider, through its login page (login `login`), up
 * to the redirect back to Loupe's callback: the callback URL, not yet visited (a test may alter it).
 */
export async function signInAtProvider(jar: CookieJar, authorizationUrl: URL, login: string): Promise<URL> {
  let url = authorizationUrl;
  let response = await browserFetch(jar, url);
  for (let hops = 0; hops < 20; hops++) {
    if (response.status >= 300 && response.status < 400) {
      const next = new URL(response.headers.get('location')!, url);
      await response.body?.cancel();
      if (next.pathname === '/auth/oidc/callback') return next;
      url = next;
      response = await browserFetch(jar, url);
      continue;
    }
    const html = await response.text();
    if (response.status !== 200) throw new Error(`provider answered ${response.status}: ${html.slice(0, 500)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`no form at ${url.href}: ${html.slice(0, 500)}`);
    url = new URL(action.replaceAll('&amp;', '&'), url);
    response = await browserFetch(jar, url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(prompt === 'login' ? { prompt, login, password: 'any password' } : { prompt }).toString(),
    });
  }
  throw new Error('too many redirects at the provider');
}
