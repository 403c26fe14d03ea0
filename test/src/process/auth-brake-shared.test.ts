import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserViaCli, startChildServer, type ChildServer } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, withClient, type TestDatabase } from '../harness/databases.ts';
import { rest } from '../harness/http.ts';

const NAME = 'failed-authentication brake shared by two server processes [postgresql]';
const LIMIT = 20;

(postgresAvailable ? describe : describe.skip)(postgresAvailable ? NAME : `${NAME} — SKIPPED: TEST_DATABASE_URL is unset`, () => {
  let database: TestDatabase;
  let servers: ChildServer[] = [];
  let key: string;

  beforeAll(async () => {
    database = await freshDatabase('postgresql');
    ({ api_key: key } = await createUserViaCli(database.url));
    // One after the other: each migrates the database at start-up.
    for (let i = 0; i < 2; i++) servers.push(await startChildServer({ databaseUrl: database.url, env: { LOUPE_TRUST_PROXY: '1' } }));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await database?.drop();
  });

  const stored = () =>
    withClient(database.url, async (client: pg.Client) => (await client.query('select client, failures from auth_failures order by client')).rows);

  it('brakes a client after the limit of failures split across both, on either', async () => {
    const [a, b] = servers as [ChildServer, ChildServer];
    expect(a.child.pid).not.toBe(b.child.pid);
    const from = { 'x-forwarded-for': '203.0.113.50' };
    for (let i = 0; i < LIMIT; i++) {
      const reply = await rest(i % 2 ? b : a, 'GET', '/me', { key: `lp_wrong${i}`, headers: from });
      expect(reply.status, `try ${i}`).toBe(401);
    }
    expect(await stored()).toEqual([{ client: '203.0.113.50', failures: LIMIT }]);
    for (const server of [a, b]) {
      const blocked = await rest(server, 'GET', '/me', { key: 'lp_wrong', headers: from });
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(blocked.body).toMatchObject({ code: 'TOO_MANY_REQUESTS', reason: expect.stringMatching(/too many failed/i) });
      // The valid key still gets in on both.
      expect((await rest(server, 'GET', '/me', { key, headers: from })).status).toBe(200);
    }
    expect(await stored()).toEqual([{ client: '203.0.113.50', failures: LIMIT + 2 }]);
  });
});
