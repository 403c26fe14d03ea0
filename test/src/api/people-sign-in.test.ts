import { createHash } from 'node:crypto';
import { sql, sqlRows, sqlRun } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest, type Reply } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { givePassword, sessionCookieOf, signIn, withCookie } from '../harness/sessions.ts';

// Password sign-in and sessions (contract 5.12), and the attacks of issue 29 on them. The server
// trusts the loopback proxy, so each test speaks as its own clients (X-Forwarded-For) and the
// brake's count of one does not touch another's; the brake allows 3 failures a minute here.

const ENTITY = 'people';
const PROJECT = `${ENTITY}/main`;
const PASSWORD = 'correct horse battery staple';

describeEachBackend('sign-in and sessions', (backend) => {
  let server: TestServer;
  let clients = 0;
  /** A client address of its own (brake counts are per client). */
  const client = () => ({ 'x-forwarded-for': `10.1.${Math.floor(++clients / 250)}.${clients % 250}` });

  async function person(): Promise<CreatedKeyForTest> {
    const user = await createUser(server, { entity: ENTITY, role: 'member' });
    await givePassword(server, user.username, PASSWORD);
    return user;
  }

  const me = (cookie: string) => withCookie(server, cookie, 'GET', '/me');

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_TRUST_PROXY: 'loopback', LOUPE_AUTH_FAILURES_PER_MINUTE: '3' });
  });
  afterAll(() => server?.stop());

  it('signs in: the user, and a cookie HttpOnly, SameSite=Lax, Path=/ (Secure over HTTPS only); the session is stored as a hash', async () => {
    const alice = await person();
    const { reply, cookie } = await signIn(server, alice.username, PASSWORD, client());
    expect(reply.body.user).toEqual({ user_id: alice.user_id, username: alice.username, memberships: [{ entity: ENTITY, role: 'member' }] });
    const header = reply.headers.get('set-cookie')!;
    expect(header).toMatch(/; HttpOnly/);
    expect(header).toMatch(/; SameSite=Lax/);
    expect(header).toMatch(/; Path=\//);
    expect(header).not.toMatch(/Secure/);
    const secure = await rest(server, 'POST', '/auth/sign-in', { body: { username: alice.username, password: PASSWORD }, headers: { ...client(), 'x-forwarded-proto': 'https' } });
    expect(secure.headers.get('set-cookie')).toMatch(/; Secure/);

    const token = cookie.slice('loupe_session='.length);
    const stored = await sqlRows<{ token_hash: string }>(server.server.services.orm.em, sql`select token_hash from sessions where user_id = ${alice.user_id}`);
    expect(stored.map((row) => row.token_hash)).toContain(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(stored)).not.toContain(token);
    expect((await me(cookie)).body).toMatchObject({ user_id: alice.user_id });
  });

  it('a wrong password, an unknown user and a user without a password get the same 401, each after one password hash', async () => {
    const alice = await person();
    const nopassword = await createUser(server, { entity: ENTITY, role: 'member' });
    const metrics = await createUser(server, { entity: ENTITY, role: 'viewer' });
    /** Password hashes the server has run, from /metrics. */
    const hashes = async () => {
      const reply = await rest(server, 'GET', '/metrics', { key: metrics.api_key });
      expect(reply.status, reply.text).toBe(200);
      return Number(/^loupe_password_hashes_total (\d+)$/m.exec(reply.text)?.[1]);
    };
    /** A sign-in, and how many hashes it cost. */
    const attempt = async (username: string, password: string) => {
      const before = await hashes();
      const reply = await rest(server, 'POST', '/auth/sign-in', { body: { username, password }, headers: client() });
      return { reply, hashes: (await hashes()) - before };
    };
    // A sign-in refused before any hash (an empty password: 400) costs none.
    const baseline = await attempt('nobody', '');
    const wrong = await attempt(alice.username, 'not the password');
    const unknown = await attempt('nobody-at-all', PASSWORD);
    const without = await attempt(nopassword.username, PASSWORD);
    const { request_id: _, ...refusal } = wrong.reply.body;
    for (const { reply } of [wrong, unknown, without]) {
      expect(reply.status).toBe(401);
      expect(reply.headers.get('set-cookie')).toBeNull();
      expect({ ...reply.body, request_id: undefined }).toEqual({ ...refusal, request_id: undefined });
    }
    expect(refusal.reason).toBe('The username or the password is wrong.');
    expect(baseline.reply.status).toBe(400);
    // One argon2id hash each (an unknown user and a user without a password are checked against a
    // fixed hash): none answers sooner than the others, and none costs more.
    expect([baseline, wrong, unknown, without].map((run) => run.hashes)).toEqual([0, 1, 1, 1]);
  });

  it('gives a new session at every sign-in and ends the one the request carried (no session fixation)', async () => {
    const alice = await person();
    const planted = 'loupe_session=planted-by-someone-else-0123456789abcdef';
    const first = await signIn(server, alice.username, PASSWORD, { ...client(), cookie: planted });
    expect(first.cookie).not.toBe(planted);
    const second = await signIn(server, alice.username, PASSWORD, { ...client(), cookie: first.cookie });
    expect(second.cookie).not.toBe(first.cookie);
    expect((await me(first.cookie)).status).toBe(401);
    expect((await me(second.cookie)).status).toBe(200);
  });

  it('accepts the cookie on every protected route; a cookie write from another site is refused (403) while the same with a key passes', async () => {
    const alice = await person();
    const { cookie } = await signIn(server, alice.username, PASSWORD, client());
    const call = (id: string) => ({ batch: [{ project_id: PROJECT, id, op_name: 'chat', started_at: '2026-01-01T00:00:00.000Z' }] });
    const evil = 'https://evil.example';

    const refused = await withCookie(server, cookie, 'POST', '/calls/batch/create', { body: call('from-evil'), headers: { origin: evil } });
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toBe('cross-site request refused');
    const fetchSite = await withCookie(server, cookie, 'POST', '/calls/batch/create', { body: call('from-evil-2'), headers: { origin: undefined, 'sec-fetch-site': 'cross-site' } });
    expect(fetchSite.status).toBe(403);
    const nullOrigin = await withCookie(server, cookie, 'POST', '/calls/batch/create', { body: call('from-null'), headers: { origin: 'null' } });
    expect(nullOrigin.status).toBe(403);

    const byKey = await rest(server, 'POST', '/calls/batch/create', { key: alice.api_key, body: call('by-key'), headers: { origin: evil } });
    expect(byKey.status, byKey.text).toBe(200);
    const own = await withCookie(server, cookie, 'POST', '/calls/batch/create', { body: call('own-origin') });
    expect(own.status, own.text).toBe(200);
    const sameOrigin = await withCookie(server, cookie, 'POST', '/calls/batch/create', { body: call('same-origin'), headers: { origin: undefined, 'sec-fetch-site': 'same-origin' } });
    expect(sameOrigin.status, sameOrigin.text).toBe(200);
    // A read is no write: a page of another site may not read the answer anyway.
    expect((await withCookie(server, cookie, 'GET', '/me', { headers: { origin: evil } })).status).toBe(200);

    const stored = await rest(server, 'POST', '/calls/query', { key: alice.api_key, body: { project_id: PROJECT, filter: { call_ids: ['from-evil', 'from-evil-2', 'from-null', 'by-key', 'own-origin', 'same-origin'] } } });
    expect(stored.body.calls.map((c: { id: string }) => c.id).sort()).toEqual(['by-key', 'own-origin', 'same-origin']);
  });

  it('signing out ends the session on the server at once', async () => {
    const alice = await person();
    const { cookie } = await signIn(server, alice.username, PASSWORD, client());
    const other = await signIn(server, alice.username, PASSWORD, client());
    const out = await withCookie(server, cookie, 'POST', '/auth/sign-out', { body: {} });
    expect(out.body).toEqual({ signed_out: true });
    expect(out.headers.get('set-cookie')).toMatch(/^loupe_session=; .*Max-Age=0/);
    const after = await me(cookie);
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toBe('Basic realm="loupe"');
    expect((await me(other.cookie)).status).toBe(200); // another device's session goes on
    // With a key there is no session to end.
    expect((await rest(server, 'POST', '/auth/sign-out', { key: alice.api_key, body: {} })).body).toEqual({ signed_out: false });
  });

  it('a password change ends every session of the user at once; the old password no longer signs in', async () => {
    const alice = await person();
    const phone = await signIn(server, alice.username, PASSWORD, client());
    const laptop = await signIn(server, alice.username, PASSWORD, client());
    await givePassword(server, alice.username, 'a brand new passphrase');
    expect((await me(phone.cookie)).status).toBe(401);
    expect((await me(laptop.cookie)).status).toBe(401);
    expect((await rest(server, 'POST', '/auth/sign-in', { body: { username: alice.username, password: PASSWORD }, headers: client() })).status).toBe(401);
    await signIn(server, alice.username, 'a brand new passphrase', client());
  });

  it('brakes a client that sprays passwords over many usernames (429, Retry-After) before hashing more; other clients sign in', async () => {
    const alice = await person();
    const sprayer = client();
    for (const username of ['spray-a', 'spray-b', alice.username]) {
      expect((await rest(server, 'POST', '/auth/sign-in', { body: { username, password: 'password spraying 1' }, headers: sprayer })).status).toBe(401);
    }
    const braked = await rest(server, 'POST', '/auth/sign-in', { body: { username: alice.username, password: PASSWORD }, headers: sprayer });
    expect(braked.status).toBe(429);
    expect(Number(braked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(braked.headers.get('set-cookie')).toBeNull();
    await signIn(server, alice.username, PASSWORD, client());
  });

  it('bounds a flood of sign-ins from many clients: two hashes at a time, a short queue, the rest 503 with a reason; /health answers and a person still signs in', async () => {
    const alice = await person();
    const healthStatuses: number[] = [];
    const polls: Promise<unknown>[] = [];
    const health = setInterval(() => polls.push(fetch(`${server.url}/health`).then((reply) => healthStatuses.push(reply.status), () => healthStatuses.push(0))), 50);
    // 150 clients at once, each one try (under the brake): unknown users, each costing a hash.
    const replies = await Promise.all(
      Array.from({ length: 150 }, (_, n) => rest(server, 'POST', '/auth/sign-in', { body: { username: `flood-${n}`, password: 'a flood of sign-ins' }, headers: client() })),
    );
    clearInterval(health);
    await Promise.all(polls);
    const statuses = replies.map((reply) => reply.status);
    expect(new Set(statuses)).toEqual(new Set([401, 503]));
    // At most two hashing and 32 waiting when the queue was full: most of the burst is refused at once.
    expect(statuses.filter((status) => status === 503).length).toBeGreaterThan(50);
    for (const reply of replies.filter((r) => r.status === 503)) {
      expect(reply.body.reason).toBe('The server is checking as many passwords as it can at once; retry shortly.');
      expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(reply.headers.get('set-cookie')).toBeNull();
    }
    expect(healthStatuses.length).toBeGreaterThan(0);
    expect(new Set(healthStatuses)).toEqual(new Set([200]));
    // A refused try is not a failure: nobody was braked by the flood, and the queue is empty again.
    await signIn(server, alice.username, PASSWORD, client());
  });

  it('brakes sign-ins to a username that failed too often, from any client, but never its open sessions', async () => {
    const alice = await person();
    const bob = await person();
    const open = await signIn(server, alice.username, PASSWORD, client());
    for (let i = 0; i < 3; i++) {
      expect((await rest(server, 'POST', '/auth/sign-in', { body: { username: alice.username, password: `guess number ${i} here` }, headers: client() })).status).toBe(401);
    }
    const braked = await rest(server, 'POST', '/auth/sign-in', { body: { username: alice.username, password: PASSWORD }, headers: client() });
    expect(braked.status).toBe(429);
    // Alice's session is untouched by the failures of others, reads and writes alike.
    expect((await me(open.cookie)).status).toBe(200);
    const write = await withCookie(server, open.cookie, 'POST', '/calls/batch/create', { body: { batch: [{ project_id: PROJECT, id: 'still-signed-in', op_name: 'chat', started_at: '2026-01-01T00:00:00.000Z' }] } });
    expect(write.status, write.text).toBe(200);
    await signIn(server, bob.username, PASSWORD, client());
  });

  it('ends a session idle for LOUPE_SESSION_IDLE_HOURS or older than LOUPE_SESSION_MAX_DAYS; activity is written at most once a minute', async () => {
    const alice = await person();
    const db = server.server.services.orm.em;
    const idle = await signIn(server, alice.username, PASSWORD, client());
    const old = await signIn(server, alice.username, PASSWORD, client());
    const fresh = await signIn(server, alice.username, PASSWORD, client());
    const hashOf = (cookie: string) => createHash('sha256').update(cookie.slice('loupe_session='.length)).digest('hex');
    const at = (date: Date) => (backend === 'sqlite' ? date.getTime() : date);
    const lastSeen = async (cookie: string) =>
      (await sqlRows<{ last_seen_at: unknown }>(db, sql`select last_seen_at from sessions where token_hash = ${hashOf(cookie)}`))[0]!.last_seen_at;

    await sqlRun(db, sql`update sessions set last_seen_at = ${at(new Date(Date.now() - 73 * 3_600_000))} where token_hash = ${hashOf(idle.cookie)}`);
    await sqlRun(db, sql`update sessions set expires_at = ${at(new Date(Date.now() - 1000))} where token_hash = ${hashOf(old.cookie)}`);
    expect((await me(idle.cookie)).status).toBe(401);
    expect((await me(old.cookie)).status).toBe(401);

    const before = await lastSeen(fresh.cookie);
    for (let i = 0; i < 3; i++) expect((await me(fresh.cookie)).status).toBe(200);
    expect(await lastSeen(fresh.cookie)).toEqual(before);
    // Seen two minutes ago: the next request writes it again.
    await sqlRun(db, sql`update sessions set last_seen_at = ${at(new Date(Date.now() - 120_000))} where token_hash = ${hashOf(fresh.cookie)}`);
    expect((await me(fresh.cookie)).status).toBe(200);
    const touched = await lastSeen(fresh.cookie);
    expect(new Date(touched as string | number | Date).getTime()).toBeGreaterThan(Date.now() - 10_000);
  });

  it('refuses a bad sign-in body with 400 naming the field, and answers no cookie', async () => {
    const reply = await rest(server, 'POST', '/auth/sign-in', { body: { username: 'alice', password: 'x', remember: true }, headers: client() });
    expect(reply.status).toBe(400);
    expect(sessionCookieOf(reply)).toBeUndefined();
  });
});
