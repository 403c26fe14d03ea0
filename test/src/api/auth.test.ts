import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkEm, revokeKey } from '@loupe/server';
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
    await revokeKey(forkEm(server.server.services.orm), bob.key_id);
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

describe('failed-authentication brake', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(() => server?.stop());

  it('answers 429 with Retry-After after 20 failed attempts from one client in a minute', async () => {
    const dave = await createUser(server);
    for (let i = 0; i < 20; i++) {
      expect((await rest(server, 'GET', '/me', { key: `lp_wrong${i}` })).status).toBe(401);
    }
    const blocked = await rest(server, 'GET', '/me', { key: 'lp_wrong20' });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(blocked.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(blocked.body).toMatchObject({ code: 'TOO_MANY_REQUESTS', reason: expect.stringMatching(/too many failed/i) });
    // The brake holds for valid credentials from that client too, until the minute has passed.
    expect((await rest(server, 'GET', '/me', { key: dave.api_key })).status).toBe(429);
    // Public routes are not braked.
    expect((await rest(server, 'GET', '/inference/router/partner/models')).status).toBe(200);
  });
});
