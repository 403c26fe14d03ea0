import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { loadConfig, sql, sqlRows } from '@loupe/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { rest } from '../harness/http.ts';
import { browserFetch, CookieJar, signInAtProvider, startTestProvider, type TestProvider } from '../harness/oidc-provider.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { withCookie } from '../harness/sessions.ts';

// Single sign-on with OpenID Connect (contract 5.12) against a real provider in this process
// (oidc-provider), the browser's part played over real HTTP with a cookie jar: Loupe's start
// redirect, the provider's login page, the redirect back to Loupe's callback.

const ENTITY = 'sso';
const ROLE_MAP = 'loupe-admins=admin, annotators=annotator, staff=member';

describeEachBackend('single sign-on', (backend) => {
  let provider: TestProvider;
  let server: TestServer;
  /** Password sign-in off, SSO on (no flow through it: its answers about methods). */
  let ssoOnly: TestServer;
  /** Another server whose SSO entity is its own: its first admin is its only one. */
  let lone: TestServer;
  let people = 0;
  const login = (account: Parameters<TestProvider['accounts']['set']>[1]) => {
    const sub = `person-${backend}-${++people}`;
    provider.accounts.set(sub, account);
    return sub;
  };
  const env = () => ({
    LOUPE_OIDC_ISSUER: provider.issuer,
    LOUPE_OIDC_CLIENT_ID: 'loupe',
    LOUPE_OIDC_CLIENT_SECRET: 'loupe-client-secret-0123456789',
    LOUPE_OIDC_ENTITY: ENTITY,
    LOUPE_OIDC_ROLE_MAP: ROLE_MAP,
  });

  beforeAll(async () => {
    provider = await startTestProvider();
    server = await startTestServer(backend, env());
    ssoOnly = await startTestServer(backend, { ...env(), LOUPE_PASSWORD_SIGN_IN: 'false' });
    lone = await startTestServer(backend, { ...env(), LOUPE_OIDC_ENTITY: 'lone' });
    const redirect_uris = [`${server.url}/auth/oidc/callback`];
    provider.register([
      { client_id: 'loupe', client_secret: 'loupe-client-secret-0123456789', redirect_uris: [...redirect_uris, `${lone.url}/auth/oidc/callback`] },
      // Another application at the same provider, allowed the same redirect URI.
      { client_id: 'other-app', client_secret: 'other-app-secret-0123456789', redirect_uris },
    ]);
  });
  afterAll(async () => {
    await server?.stop();
    await ssoOnly?.stop();
    await lone?.stop();
    await provider?.close();
  });

  /** Loupe's start: the authorization URL it redirects to, the state cookie set in the jar. */
  async function start(jar: CookieJar, path = '/auth/oidc/start'): Promise<URL> {
    const response = await browserFetch(jar, new URL(path, server.url));
    expect(response.status, await response.clone().text()).toBe(302);
    return new URL(response.headers.get('location')!);
  }

  /** The whole flow up to Loupe's answer to the callback. */
  async function signOn(sub: string, jar = new CookieJar()): Promise<{ jar: CookieJar; callback: URL; answer: Response }> {
    const callback = await signInAtProvider(jar, await start(jar), sub);
    const answer = await browserFetch(jar, callback);
    return { jar, callback, answer };
  }

  const sessionOf = (jar: CookieJar) => {
    const token = jar.get(new URL(server.url).origin, 'loupe_session');
    return token === undefined ? undefined : `loupe_session=${token}`;
  };
  const db = () => server.server.services.orm.em;
  const usersNamed = async (username: string) => sqlRows<{ id: string }>(db(), sql`select id from users where username = ${username}`);

  it('starts with a redirect to the provider: code flow, PKCE S256, state, nonce, our client and redirect URI; the state in a sealed cookie for /auth/oidc only', async () => {
    const jar = new CookieJar();
    const response = await browserFetch(jar, new URL('/auth/oidc/start', server.url));
    expect(response.status).toBe(302);
    const url = new URL(response.headers.get('location')!);
    expect(url.origin).toBe(provider.issuer);
    const params = Object.fromEntries(url.searchParams);
    expect(params).toMatchObject({ response_type: 'code', client_id: 'loupe', code_challenge_method: 'S256', redirect_uri: `${server.url}/auth/oidc/callback` });
    expect(params.scope).toContain('openid');
    for (const name of ['state', 'nonce', 'code_challenge']) expect(params[name]).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const cookie = response.headers.getSetCookie().find((line) => line.startsWith('loupe_oidc='))!;
    expect(cookie).toMatch(/; Path=\/auth\/oidc; HttpOnly; SameSite=Lax; Max-Age=600/);
    // Sealed: none of the attempt's values can be read from it.
    for (const name of ['state', 'nonce']) expect(cookie).not.toContain(params[name]);
  });

  it('signs a new person in: a user named from preferred_username, a member of the entity with the mapped role, a session; the sign-in in the audit log', async () => {
    const sub = login({ preferred_username: 'ada.l', email: 'ada@example.com', groups: ['staff', 'loupe-admins'] });
    const { jar, answer } = await signOn(sub);
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe('/app/');
    // The state cookie is cleared with the answer.
    expect(answer.headers.getSetCookie().some((line) => /^loupe_oidc=;.*Max-Age=0/.test(line))).toBe(true);
    const cookie = sessionOf(jar)!;
    expect(cookie).toMatch(/^loupe_session=[A-Za-z0-9_-]{40,}$/);

    const me = await withCookie(server, cookie, 'GET', '/me');
    expect(me.status, me.text).toBe(200);
    // Two groups map: the strongest role wins.
    expect(me.body).toMatchObject({ username: 'ada.l', memberships: [{ entity: ENTITY, role: 'admin' }] });
    const members = await withCookie(server, cookie, 'POST', `/entities/${ENTITY}/members/query`, { body: {} });
    expect(members.body.members).toContainEqual(expect.objectContaining({ user_id: me.body.user_id, username: 'ada.l', role: 'admin' }));
    const stored = await sqlRows<{ issuer: string; subject: string }>(db(), sql`select issuer, subject from user_identities where user_id = ${me.body.user_id}`);
    expect(stored).toEqual([{ issuer: provider.issuer, subject: sub }]);
    const [user] = await sqlRows<{ password_hash: string | null }>(db(), sql`select password_hash from users where id = ${me.body.user_id}`);
    expect(user!.password_hash).toBeNull();

    // The access log has the callback without its code and state.
    const lines = server.logs.filter((line) => typeof line.url === 'string' && (line.url as string).startsWith('/auth/oidc/callback'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((line) => line.url === '/auth/oidc/callback?…')).toBe(true);

    const audit = await withCookie(server, cookie, 'POST', `/entities/${ENTITY}/audit/query`, { body: {} });
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.events).toContainEqual(expect.objectContaining({
      action: 'sign_in',
      actor_user_id: me.body.user_id,
      detail: expect.objectContaining({ method: 'single_sign_on', subject: sub, new_user: true, joined_as: 'admin' }),
    }));
  });

  it('a returning person keeps their account (same user id); a name taken is made unique; the role follows the claim, but the last admin is never demoted', async () => {
    // Someone already has the name "grace": the person gets "grace-2".
    const other = login({ preferred_username: 'grace', groups: ['staff'] });
    const first = await signOn(other);
    expect(first.answer.status).toBe(302);
    const sub = login({ preferred_username: 'grace', groups: 'annotators' });
    const once = await signOn(sub);
    const me1 = (await withCookie(server, sessionOf(once.jar)!, 'GET', '/me')).body;
    expect(me1).toMatchObject({ username: 'grace-2', memberships: [{ entity: ENTITY, role: 'annotator' }] });

    provider.accounts.set(sub, { preferred_username: 'grace-renamed', groups: ['staff'] });
    const again = await signOn(sub);
    const me2 = (await withCookie(server, sessionOf(again.jar)!, 'GET', '/me')).body;
    expect(me2.user_id).toBe(me1.user_id);
    expect(me2).toMatchObject({ username: 'grace-2', memberships: [{ entity: ENTITY, role: 'member' }] });
    expect(await usersNamed('grace-renamed')).toEqual([]);

    // The only admin of an entity of its own keeps the role whatever the claim says.
    {
      const boss = login({ preferred_username: 'boss', groups: ['loupe-admins'] });
      const loneFlow = async () => {
        const jar = new CookieJar();
        const response = await browserFetch(jar, new URL('/auth/oidc/start', lone.url));
        const callback = await signInAtProvider(jar, new URL(response.headers.get('location')!), boss);
        const answer = await browserFetch(jar, callback);
        expect(answer.status).toBe(302);
        return `loupe_session=${jar.get(new URL(lone.url).origin, 'loupe_session')}`;
      };
      expect((await withCookie(lone, await loneFlow(), 'GET', '/me')).body.memberships).toEqual([{ entity: 'lone', role: 'admin' }]);
      provider.accounts.set(boss, { preferred_username: 'boss', groups: ['staff'] });
      expect((await withCookie(lone, await loneFlow(), 'GET', '/me')).body.memberships).toEqual([{ entity: 'lone', role: 'admin' }]);
    }
  });

  it('lands on the return_to path of the web app, and on /app/ for anything else (no other site)', async () => {
    const sub = login({ preferred_username: 'returner', groups: ['staff'] });
    const landing = async (returnTo: string) => {
      const jar = new CookieJar();
      const callback = await signInAtProvider(jar, await start(jar, `/auth/oidc/start?return_to=${encodeURIComponent(returnTo)}`), sub);
      const answer = await browserFetch(jar, callback);
      expect(answer.status).toBe(302);
      return answer.headers.get('location');
    };
    expect(await landing('/app/projects/sso/main')).toBe('/app/projects/sso/main');
    for (const elsewhere of ['https://evil.example/', '//evil.example/app/', '/app//evil.example', '/docs']) expect(await landing(elsewhere)).toBe('/app/');
  });

  it('a first sign-in twice at once (two tabs) makes one account', async () => {
    const sub = login({ preferred_username: 'twice', groups: ['staff'] });
    const jars = [new CookieJar(), new CookieJar()];
    const callbacks = await Promise.all(jars.map(async (jar) => signInAtProvider(jar, await start(jar), sub)));
    const answers = await Promise.all(callbacks.map((callback, i) => browserFetch(jars[i]!, callback)));
    expect(answers.map((answer) => answer.status)).toEqual([302, 302]);
    const ids = await Promise.all(jars.map(async (jar) => (await withCookie(server, sessionOf(jar)!, 'GET', '/me')).body.user_id));
    expect(ids[0]).toBe(ids[1]);
    expect(await usersNamed('twice')).toEqual([{ id: ids[0] }]);
    expect(await usersNamed('twice-2')).toEqual([]);
  });

  it('ends on a 401 page when the person cancels at the provider (access_denied)', async () => {
    const jar = new CookieJar();
    const authorization = await start(jar);
    const toLogin = await browserFetch(jar, authorization);
    expect(toLogin.status).toBe(303);
    const interaction = new URL(toLogin.headers.get('location')!, authorization);
    // The provider's "cancel": its abort route, which answers the client with access_denied.
    let response = await browserFetch(jar, new URL(`${interaction.pathname}/abort`, interaction));
    let url = new URL(response.headers.get('location')!, interaction);
    while (url.pathname !== '/auth/oidc/callback') {
      response = await browserFetch(jar, url);
      url = new URL(response.headers.get('location')!, url);
    }
    expect(url.searchParams.get('error')).toBe('access_denied');
    const answer = await browserFetch(jar, url);
    expect(answer.status).toBe(401);
    expect(await answer.text()).toContain('did not sign you in (access_denied');
    expect(sessionOf(jar)).toBeUndefined();
  });

  it.skipIf(backend === 'sqlite')('an attempt started at one server process finishes at another on the same database (behind a balancer): the same secret opens its cookie', async () => {
    const second = await startTestServer(backend, env(), server.database);
    try {
      const sub = login({ preferred_username: 'balanced', groups: ['staff'] });
      const jar = new CookieJar();
      const callback = await signInAtProvider(jar, await start(jar), sub);
      // The balancer sends the browser's return to the other process (same host name for the browser).
      const attempt = jar.get(new URL(server.url).origin, 'loupe_oidc')!;
      const otherJar = new CookieJar();
      otherJar.set(new URL(second.url).origin, 'loupe_oidc', attempt);
      const answer = await browserFetch(otherJar, new URL(`${callback.pathname}${callback.search}`, second.url));
      expect(answer.status, await answer.clone().text()).toBe(302);
      const token = otherJar.get(new URL(second.url).origin, 'loupe_session')!;
      const me = await withCookie(server, `loupe_session=${token}`, 'GET', '/me');
      expect(me.body).toMatchObject({ username: 'balanced', memberships: [{ entity: ENTITY, role: 'member' }] });
    } finally {
      await second.stop();
    }
  });

  it('refuses an answer whose state is not the attempt\'s (400): no session, nothing made', async () => {
    const sub = login({ preferred_username: 'mallory-state', groups: ['staff'] });
    const jar = new CookieJar();
    const callback = await signInAtProvider(jar, await start(jar), sub);
    callback.searchParams.set('state', 'a-state-of-another-attempt-0123456789');
    const answer = await browserFetch(jar, callback);
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await answer.text()).toContain('does not belong to the attempt started in this browser');
    expect(sessionOf(jar)).toBeUndefined();
    expect(await usersNamed('mallory-state')).toEqual([]);

    // No attempt cookie at all (the callback opened in another browser): 400 too.
    const bare = await fetch(callback, { redirect: 'manual' });
    expect(bare.status).toBe(400);
    expect(await bare.text()).toContain('expired or was not started in this browser');
  });

  it('refuses a replayed code (the provider redeems a code once), even with the attempt\'s cookie kept', async () => {
    const sub = login({ preferred_username: 'replayed', groups: ['staff'] });
    const jar = new CookieJar();
    const callback = await signInAtProvider(jar, await start(jar), sub);
    const attemptCookie = jar.get(new URL(server.url).origin, 'loupe_oidc')!;
    expect((await browserFetch(jar, callback)).status).toBe(302);
    // Someone who saw the callback's address and kept the attempt's cookie sends both again.
    const replayJar = new CookieJar();
    replayJar.set(new URL(server.url).origin, 'loupe_oidc', attemptCookie);
    const replay = await browserFetch(replayJar, callback);
    expect(replay.status).toBe(401);
    expect(await replay.text()).toContain('refused the sign-in code (invalid_grant');
    expect(sessionOf(replayJar)).toBeUndefined();
  });

  it('refuses a code issued to another client of the provider (its ID token would be for that client, not Loupe)', async () => {
    const sub = login({ preferred_username: 'other-client', groups: ['staff'] });
    const jar = new CookieJar();
    const authorization = await start(jar);
    // The same attempt (state, nonce, PKCE challenge), but the provider is asked as the other application.
    authorization.searchParams.set('client_id', 'other-app');
    const callback = await signInAtProvider(jar, authorization, sub);
    const answer = await browserFetch(jar, callback);
    expect(answer.status).toBe(401);
    expect(await answer.text()).toContain('refused the sign-in code');
    expect(sessionOf(jar)).toBeUndefined();
    expect(await usersNamed('other-client')).toEqual([]);
  });

  it('refuses an ID token issued to another client (its audience is not Loupe), even with the attempt\'s own nonce, in place of Loupe\'s', async () => {
    const sub = login({ preferred_username: 'other-audience', groups: ['staff'] });
    const jar = new CookieJar();
    const authorization = await start(jar);
    // The other application signs the same person in with Loupe's nonce, and redeems its code.
    const verifier = randomBytes(32).toString('base64url');
    const asOther = new URL(authorization);
    for (const [name, value] of Object.entries({ client_id: 'other-app', state: 'other-state', code_challenge: createHash('sha256').update(verifier).digest('base64url') })) {
      asOther.searchParams.set(name, value);
    }
    const otherCallback = await signInAtProvider(new CookieJar(), asOther, sub);
    const tokens = await fetch(`${provider.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('other-app:other-app-secret-0123456789').toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: otherCallback.searchParams.get('code')!, redirect_uri: `${server.url}/auth/oidc/callback`, code_verifier: verifier }),
    });
    expect(tokens.status).toBe(200);
    const { id_token: foreign } = (await tokens.json()) as { id_token: string };
    const claims = JSON.parse(Buffer.from(foreign.split('.')[1]!, 'base64url').toString('utf8')) as { aud: string; nonce: string; sub: string };
    expect(claims).toMatchObject({ aud: 'other-app', nonce: authorization.searchParams.get('nonce'), sub });

    // Loupe's own flow, whose token answer carries that ID token instead of Loupe's.
    const callback = await signInAtProvider(jar, authorization, sub);
    provider.swapNextIdToken(foreign);
    const answer = await browserFetch(jar, callback);
    expect(answer.status).toBe(401);
    // openid-client's check of the ID token's claims: the issuer, nonce and subject are right; the audience is not.
    expect(await answer.text()).toContain('answer failed verification (unexpected JWT claim value encountered)');
    expect(sessionOf(jar)).toBeUndefined();
    expect(await usersNamed('other-audience')).toEqual([]);
  });

  it('refuses a person whose claim maps no role, with no default role (403): no user made; the refusal in the entity\'s audit log', async () => {
    const sub = login({ preferred_username: 'outsider', groups: ['contractors'] });
    const { jar, answer } = await signOn(sub);
    expect(answer.status).toBe(403);
    expect(await answer.text()).toContain('has no role in Loupe');
    expect(sessionOf(jar)).toBeUndefined();
    expect(await usersNamed('outsider')).toEqual([]);
    expect(await sqlRows(db(), sql`select user_id from user_identities where subject = ${sub}`)).toEqual([]);
    const [failure] = await sqlRows<{ entity: string; detail: unknown }>(db(), sql`select entity, detail from audit_events where action = 'sign_in_failed' and entity = ${ENTITY} order by created_at desc limit 1`);
    expect(failure!.entity).toBe(ENTITY);
    expect(JSON.stringify(failure!.detail)).toContain(sub);
  });

  it('with LOUPE_PASSWORD_SIGN_IN=false: the methods say single sign-on only, and the password route answers 403 with a reason', async () => {
    const methods = await rest(ssoOnly, 'GET', '/auth/methods');
    expect(methods.status).toBe(200);
    expect(methods.body).toEqual({ password: false, single_sign_on: true });
    const refused = await rest(ssoOnly, 'POST', '/auth/sign-in', { body: { username: 'anyone', password: 'any password at all' } });
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toMatch(/Password sign-in is turned off/);
    expect(refused.headers.get('set-cookie')).toBeNull();
    expect((await rest(server, 'GET', '/auth/methods')).body).toEqual({ password: true, single_sign_on: true });
  });

  it('bounds the callback: a huge query string is refused (4xx) and /health keeps answering', async () => {
    const long = new URL('/auth/oidc/callback', server.url);
    long.searchParams.set('code', 'x'.repeat(6_000));
    long.searchParams.set('state', 's');
    const answer = await fetch(long, { redirect: 'manual' });
    expect(answer.status).toBe(414);
    const huger = new URL('/auth/oidc/callback', server.url);
    huger.searchParams.set('code', 'x'.repeat(100_000));
    const refused = await fetch(huger, { redirect: 'manual' }).catch(() => undefined);
    if (refused) expect(refused.status).toBeGreaterThanOrEqual(400);
    if (refused) expect(refused.status).toBeLessThan(500);
    // A HEAD never redeems a code.
    expect((await fetch(`${server.url}/auth/oidc/callback?code=a&state=b`, { method: 'HEAD', redirect: 'manual' })).status).toBe(405);
    expect((await rest(server, 'GET', '/health')).status).toBe(200);
  });
});

describeEachBackend('single sign-on with a provider that cannot be reached', (backend) => {
  let hanging: Server;
  let hangingUrl: string;
  let closedUrl: string;
  let servers: TestServer[] = [];

  beforeAll(async () => {
    // Accepts connections and never answers.
    hanging = createServer(() => {});
    hanging.listen(0, '127.0.0.1');
    await once(hanging, 'listening');
    hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    // A port nothing listens on (taken, then given back).
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    closedUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });
  afterAll(async () => {
    for (const server of servers) await server.stop();
    servers = [];
    hanging.close();
  });

  const sso = (issuer: string) => ({
    LOUPE_OIDC_ISSUER: issuer,
    LOUPE_OIDC_CLIENT_ID: 'loupe',
    LOUPE_OIDC_CLIENT_SECRET: 'secret',
    LOUPE_OIDC_ENTITY: ENTITY,
    LOUPE_OIDC_DEFAULT_ROLE: 'viewer',
    LOUPE_OIDC_TIMEOUT_MS: '1000',
  });

  it('starts anyway; a sign-in answers 502 with a reason, within the timeout, and /health keeps answering', async () => {
    for (const issuer of [closedUrl, hangingUrl]) {
      const server = await startTestServer(backend, sso(issuer));
      servers.push(server);
      const started = performance.now();
      const [answer, health] = await Promise.all([fetch(`${server.url}/auth/oidc/start`, { redirect: 'manual' }), rest(server, 'GET', '/health')]);
      expect(health.status).toBe(200);
      expect(answer.status).toBe(502);
      expect(await answer.text()).toContain('could not be reached');
      expect(performance.now() - started).toBeLessThan(5_000);
      // Not kept: the next attempt asks again (and fails again, as bounded).
      expect((await fetch(`${server.url}/auth/oidc/start`, { redirect: 'manual' })).status).toBe(502);
    }
  });

  it('without single sign-on configured: the routes answer 404 and the methods say so', async () => {
    const server = await startTestServer(backend);
    servers.push(server);
    expect((await rest(server, 'GET', '/auth/methods')).body).toEqual({ password: true, single_sign_on: false });
    for (const path of ['/auth/oidc/start', '/auth/oidc/callback?code=a&state=b']) {
      const answer = await fetch(`${server.url}${path}`, { redirect: 'manual' });
      expect(answer.status).toBe(404);
      expect(await answer.text()).toContain('Single sign-on is not configured on this server.');
    }
  });

  it('brakes a client whose callbacks keep failing (429 with Retry-After), as password sign-in does', async () => {
    const server = await startTestServer(backend, { ...sso(closedUrl), LOUPE_AUTH_FAILURES_PER_MINUTE: '2' });
    servers.push(server);
    const callback = `${server.url}/auth/oidc/callback?code=guess&state=guess`;
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(callback, { redirect: 'manual' })).status);
    expect(statuses).toEqual([400, 400, 429]);
    const braked = await fetch(callback, { redirect: 'manual' });
    expect(braked.status).toBe(429);
    expect(braked.headers.get('retry-after')).toBe('60');
    // The failures are kept in no entity's log (an anonymous client's guesses).
    const rows = await sqlRows<{ entity: string | null }>(server.server.services.orm.em, sql`select entity from audit_events where action = 'sign_in_failed'`);
    expect(rows.length).toBe(2);
    expect(rows.every((row) => row.entity === null)).toBe(true);
  });
});

describe('single sign-on settings', () => {
  const all = { LOUPE_OIDC_ISSUER: 'https://id.example.com/realms/acme', LOUPE_OIDC_CLIENT_ID: 'loupe', LOUPE_OIDC_CLIENT_SECRET: 's3cret', LOUPE_OIDC_ENTITY: 'acme' };

  it('is off without settings, on with the three and an entity; the role map is read with the strongest-first roles', () => {
    expect(loadConfig({}).people.oidc).toBeUndefined();
    const on = loadConfig({ ...all, LOUPE_OIDC_ROLE_MAP: 'loupe-admins=admin, /groups/a=b=member' }).people.oidc!;
    expect(on).toMatchObject({ issuer: all.LOUPE_OIDC_ISSUER, clientId: 'loupe', entity: 'acme', roleClaim: 'groups', defaultRole: undefined });
    expect(on.roleMap).toEqual([{ value: 'loupe-admins', role: 'admin' }, { value: '/groups/a=b', role: 'member' }]);
  });

  it('refuses to start with some of the three but not all, naming what is missing; with no role to give; with a bad role map', () => {
    expect(() => loadConfig({ LOUPE_OIDC_ISSUER: all.LOUPE_OIDC_ISSUER })).toThrow(/LOUPE_OIDC_CLIENT_ID, LOUPE_OIDC_CLIENT_SECRET are not/);
    expect(() => loadConfig({ ...all, LOUPE_OIDC_CLIENT_SECRET: '' , LOUPE_OIDC_DEFAULT_ROLE: 'viewer' })).toThrow(/LOUPE_OIDC_CLIENT_SECRET is not/);
    expect(() => loadConfig(all)).toThrow(/LOUPE_OIDC_ROLE_MAP, LOUPE_OIDC_DEFAULT_ROLE/);
    expect(() => loadConfig({ ...all, LOUPE_OIDC_ENTITY: '', LOUPE_OIDC_DEFAULT_ROLE: 'viewer' })).toThrow(/LOUPE_OIDC_ENTITY/);
    expect(() => loadConfig({ ...all, LOUPE_OIDC_ROLE_MAP: 'admins=owner' })).toThrow(/LOUPE_OIDC_ROLE_MAP/);
  });
});
