import { get, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey, sql, sqlRun, unitOfWork } from '@loupe/server';
import { describeEachBackend } from '../harness/backends.ts';
import { basic, client, createUser, rest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

describeEachBackend('authentication', (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.stop());

  it('answers 401 with the Basic challenge when credentials are missing, unknown or malformed', async () => {
    for (const authorization of [undefined, basic('lp_unknown'), 'Basic !!!', 'Token abc', 'Bearer ']) {
      const reply = await rest(server, 'GET', '/me', authorization ? { headers: { authorization } } : {});
      expect(reply.status, String(authorization)).toBe(401);
      expect(reply.headers.get('www-authenticate')).toBe('Basic realm="loupe"');
      expect(reply.body).toMatchObject({ code: 'UNAUTHORIZED', reason: expect.any(String), request_id: expect.any(String) });
    }
  });

  it("leaves the Basic challenge out of a 401 to a script of Loupe's own pages (no browser password prompt), on both doors; a navigation still gets it", async () => {
    const ownPage = { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' };
    const restReply = await rest(server, 'GET', '/me', { headers: ownPage });
    expect(restReply.status).toBe(401);
    expect(restReply.headers.get('www-authenticate')).toBeNull();
    const typed = await fetch(`${server.url}/trpc/me.read?input=${encodeURIComponent('{}')}`, { headers: ownPage });
    expect(typed.status).toBe(401);
    expect(typed.headers.get('www-authenticate')).toBeNull();
    const typedPlain = await fetch(`${server.url}/trpc/me.read?input=${encodeURIComponent('{}')}`);
    expect(typedPlain.status).toBe(401);
    expect(typedPlain.headers.get('www-authenticate')).toBe('Basic realm="loupe"');
    for (const headers of [{ ...ownPage, 'sec-fetch-site': 'cross-site' }, { ...ownPage, 'sec-fetch-site': 'none' }]) {
      const reply = await rest(server, 'GET', '/me', { headers });
      expect(reply.status).toBe(401);
      expect(reply.headers.get('www-authenticate'), JSON.stringify(headers)).toBe('Basic realm="loupe"');
    }
    // A page opened from a link of Loupe's own (fetch would add its own Sec-Fetch-Mode: plain HTTP here).
    const navigation = await new Promise<IncomingMessage>((resolve, reject) => {
      get(`${server.url}/me`, { headers: { ...ownPage, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' } }, (res) => {
        res.resume();
        resolve(res);
      }).on('error', reject);
    });
    expect(navigation.statusCode).toBe(401);
    expect(navigation.headers['www-authenticate']).toBe('Basic realm="loupe"');
  });

  it('accepts Basic with username api or the owner, and Bearer; refuses another username', async () => {
    const alice = await createUser(server, { entity: 'acme', role: 'member' });
    for (const authorization of [basic(alice.api_key), basic(alice.api_key, alice.username), `Bearer ${alice.api_key}`]) {
      const reply = await rest(server, 'GET', '/me', { headers: { authorization } });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ user_id: alice.user_id, username: alice.username, memberships: [{ entity: 'acme', role: 'member' }] });
    }
    const wrongName = await rest(server, 'GET', '/me', { headers: { authorization: basic(alice.api_key, 'mallory') } });
    expect(wrongName.status).toBe(401);
  });

  it('stops accepting a key once it is revoked', async () => {
    const bob = await createUser(server);
    expect((await rest(server, 'GET', '/me', { key: bob.api_key })).status).toBe(200);
    await revokeKey(unitOfWork(server.server.services.orm), bob.key_id);
    const reply = await rest(server, 'GET', '/me', { key: bob.api_key });
    expect(reply.status).toBe(401);
  });

  it('serves the same caller through the typed tRPC client', async () => {
    const carol = await createUser(server, { entity: 'labs', role: 'viewer' });
    const me = await client(server, carol.api_key).me.read.query({});
    expect(me).toEqual({ user_id: carol.user_id, username: carol.username, memberships: [{ entity: 'labs', role: 'viewer' }] });
    await expect(client(server, 'lp_nope').me.read.query({})).rejects.toMatchObject({ data: { httpStatus: 401 } });
  });
});

const LOCAL = '127.0.0.1';
const LIMIT = 20;

describeEachBackend('failed-authentication brake', (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.stop());
  const counted = (client: string) => server.server.services.authFailures.current(client);

  it('answers 429 with Retry-After to bad credentials past the limit, and 200 to a valid key from the same address', async () => {
    const dave = await createUser(server);
    // Without a trusted proxy, X-Forwarded-For is ignored: rotating it does not escape the count.
    for (let i = 0; i < LIMIT; i++) {
      const reply = await rest(server, 'GET', '/me', { key: `lp_wrong${i}`, headers: { 'x-forwarded-for': `198.51.100.${i}` } });
      expect(reply.status).toBe(401);
    }
    expect(await counted(LOCAL)).toBe(LIMIT);
    expect(await counted('198.51.100.0')).toBe(0);

    const blocked = await rest(server, 'GET', '/me', { key: 'lp_wrong20' });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(blocked.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(blocked.body).toMatchObject({ code: 'TOO_MANY_REQUESTS', reason: expect.stringMatching(/too many failed/i), request_id: expect.any(String) });
    expect((await rest(server, 'GET', '/me', { headers: { authorization: 'Bearer lp_wrong21' } })).status).toBe(429);
    expect(await counted(LOCAL)).toBe(LIMIT + 2);

    // A valid key is never refused by the brake, through either door, and is not counted.
    for (const authorization of [basic(dave.api_key), `Bearer ${dave.api_key}`]) {
      const me = await rest(server, 'GET', '/me', { headers: { authorization } });
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ user_id: dave.user_id, username: dave.username });
    }
    expect(await client(server, dave.api_key).me.read.query({})).toMatchObject({ user_id: dave.user_id });
    // A request without credentials is a challenge (401), not counted.
    expect((await rest(server, 'GET', '/me')).status).toBe(401);
    expect(await counted(LOCAL)).toBe(LIMIT + 2);
    // Public routes are not braked.
    expect((await rest(server, 'GET', '/inference/router/partner/models')).status).toBe(200);
  });

  it.skipIf(backend === 'sqlite')('answers 401 to bad credentials and 200 to a valid key when the count cannot be kept', async () => {
    const erin = await createUser(server);
    const orm = server.server.services.orm;
    await sqlRun(orm.em, sql`alter table auth_failures rename to auth_failures_away`);
    try {
      const bad = await rest(server, 'GET', '/me', { key: 'lp_wrong_db' });
      expect(bad.status).toBe(401);
      expect(bad.body).toMatchObject({ code: 'UNAUTHORIZED', reason: expect.any(String) });
      expect((await rest(server, 'GET', '/me', { key: erin.api_key })).status).toBe(200);
      expect(server.logs.some((line) => line.level === 40 && /brake/.test(String(line.msg)))).toBe(true);
    } finally {
      await sqlRun(orm.em, sql`alter table auth_failures_away rename to auth_failures`);
    }
  });
});

describeEachBackend('failed-authentication brake behind a proxy (LOUPE_TRUST_PROXY)', (backend) => {
  for (const trustProxy of ['1', 'loopback']) {
    describe(`LOUPE_TRUST_PROXY=${trustProxy}`, () => {
      let server: TestServer;
      beforeAll(async () => {
        server = await startTestServer(backend, { LOUPE_TRUST_PROXY: trustProxy });
      });
      afterAll(() => server?.stop());
      const counted = (client: string) => server.server.services.authFailures.current(client);

      it('counts the address the proxy appended, whatever the client wrote before it', async () => {
        const frank = await createUser(server);
        const via = (spoofed: string, client: string) => ({ 'x-forwarded-for': `${spoofed}, ${client}` });
        for (let i = 0; i < LIMIT; i++) {
          expect((await rest(server, 'GET', '/me', { key: `lp_wrong${i}`, headers: via(`10.9.${i}.1, 192.0.2.${i}`, '203.0.113.7') })).status).toBe(401);
        }
        const blocked = await rest(server, 'GET', '/me', { key: 'lp_wrong20', headers: via('10.9.99.1', '203.0.113.7') });
        expect(blocked.status).toBe(429);
        expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(await counted('203.0.113.7')).toBe(LIMIT + 1);
        expect(await counted('10.9.0.1')).toBe(0);
        expect(await counted(LOCAL)).toBe(0);
        // Another client behind the same proxy is not braked, and a valid key never is.
        expect((await rest(server, 'GET', '/me', { key: 'lp_wrong', headers: { 'x-forwarded-for': '203.0.113.8' } })).status).toBe(401);
        expect(await counted('203.0.113.8')).toBe(1);
        expect((await rest(server, 'GET', '/me', { key: frank.api_key, headers: via('10.9.0.1', '203.0.113.7') })).status).toBe(200);
      });
    });
  }
});
