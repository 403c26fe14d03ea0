import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserViaCli, startChildServer, type ChildServer } from '../harness/child-server.ts';
import { rest, type Reply } from '../harness/http.ts';
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from '../harness/private-postgres.ts';

const NAME = 'database outage and recovery [postgresql, private instance]';
const unavailable = privatePostgresUnavailable();
const RECOVERY_DEADLINE_MS = 30_000;

// Words that would betray the driver or the network to a client; the reason may only say "database".
const DRIVER_DETAIL = /ECONN|ETIMEDOUT|EPIPE|refused|terminat|socket|connect|pool|127\.0\.0\.1|:\d{2,5}\b|knex|kysely|mikro|\bpg\b|postgres|sql|stack|\bat \w/i;

function expectUnavailable(reply: Reply, what: string): void {
  expect(reply.status, `${what}: ${reply.text}`).toBe(503);
  expect(reply.headers.get('content-type'), what).toMatch(/^application\/json/);
  expect(Number(reply.headers.get('retry-after')), `${what}: Retry-After`).toBeGreaterThan(0);
  expect(reply.body, what).toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: expect.stringMatching(/database/i), request_id: expect.any(String) });
  expect(reply.body.reason, what).not.toMatch(DRIVER_DETAIL);
  expect(reply.text, what).not.toMatch(/ECONN|stack|postgres:\/\//i);
}

(unavailable ? describe.skip : describe)(unavailable ? `${NAME} — SKIPPED: ${unavailable}` : NAME, () => {
  let postgres: PrivatePostgres | undefined;
  let server: ChildServer | undefined;
  let key: string;
  let pid: number | undefined;

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    ({ api_key: key } = await createUserViaCli(postgres.url, { entity: 'acme', role: 'member' }));
    server = await startChildServer({ databaseUrl: postgres.url });
    pid = server.child.pid;
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await postgres?.destroy();
  });

  it('serves authenticated requests while the database is up', async () => {
    expect((await rest(server!, 'GET', '/me', { key })).status).toBe(200);
    expect((await rest(server!, 'GET', '/ready')).status).toBe(200);
  });

  it('answers 503 with Retry-After, and no driver detail, while the database is stopped', async () => {
    await postgres!.stop();
    expectUnavailable(await rest(server!, 'GET', '/me', { key }), 'GET /me');
    expectUnavailable(await rest(server!, 'POST', '/calls/query', { key, body: { project_id: 'acme/p' } }), 'POST /calls/query');
    expectUnavailable(await rest(server!, 'GET', '/ready'), 'GET /ready');
    // Asked again: the answer must not depend on which pooled connection a request drew.
    expectUnavailable(await rest(server!, 'GET', '/me', { key }), 'GET /me, again');
  });

  it('still answers /health and the public model list, which need no database', async () => {
    expect((await rest(server!, 'GET', '/health')).status).toBe(200);
    const models = await rest(server!, 'GET', '/inference/router/partner/models');
    expect(models.status, models.text).toBe(200);
    expect(models.body.data.length).toBeGreaterThan(0);
  });

  it('recovers by itself once the database is back, without a server restart', async () => {
    await postgres!.start();
    const started = Date.now();
    let me: Reply | undefined;
    let ready: Reply | undefined;
    while (Date.now() - started < RECOVERY_DEADLINE_MS) {
      me = await rest(server!, 'GET', '/me', { key });
      ready = await rest(server!, 'GET', '/ready');
      if (me.status === 200 && ready.status === 200) break;
      await sleep(250);
    }
    expect(me?.status, `GET /me ${RECOVERY_DEADLINE_MS} ms after the restart: ${me?.text}`).toBe(200);
    expect(ready?.status, `GET /ready ${RECOVERY_DEADLINE_MS} ms after the restart: ${ready?.text}`).toBe(200);
    expect((await rest(server!, 'POST', '/calls/query', { key, body: { project_id: 'acme/p' } })).status).toBe(200);
    expect(server!.child.pid).toBe(pid);
    expect(server!.child.exitCode).toBeNull();
  });
});
