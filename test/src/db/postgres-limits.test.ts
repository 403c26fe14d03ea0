import { sql, unitOfWork, sqlRows } from '@loupe/server';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../../server/src/db/unavailable.ts';
import { postgresAvailable, withClient } from '../harness/databases.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// PostgreSQL's own limits, set on every connection of the server's pool: a statement that runs too
// long and a transaction left idle are ended by the database, and a connection whose transaction
// failed that way goes back to the pool (or is replaced) instead of being lost.

const NAME = 'PostgreSQL statement and transaction limits [postgresql]';
const STATEMENT_MS = 1_000;
const IDLE_MS = 500;

/** Runs `work` on a client of its own inside a transaction, then rolls it back. */
async function holding<T>(url: string, lockSql: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withClient(url, async (client) => {
    await client.query('begin');
    try {
      await client.query(lockSql);
      return await work(client);
    } finally {
      await client.query('rollback');
    }
  });
}

/** Polls until a backend of the server's database waits on a lock; returns its pid. */
async function waitingBackend(client: pg.Client): Promise<number> {
  for (let i = 0; i < 200; i++) {
    // Inside a transaction the activity view is read once and kept, unless the copy is dropped.
    await client.query('select pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ pid: number }>(
      `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
    );
    if (rows[0]) return rows[0].pid;
    await sleep(25);
  }
  throw new Error('no backend started waiting on the lock');
}

(postgresAvailable ? describe : describe.skip)(postgresAvailable ? NAME : `${NAME} — SKIPPED: TEST_DATABASE_URL is unset`, () => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  const projectId = 'acme/limits';

  beforeAll(async () => {
    server = await startTestServer('postgresql', {
      LOUPE_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_MS),
      LOUPE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_MS),
      LOUPE_DB_POOL_SIZE: '2',
    });
    member = await createUser(server, { entity: 'acme', role: 'member' });
    const created = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [{ project_id: projectId, op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z' }] } });
    expect(created.status, created.text).toBe(200);
  });
  afterAll(() => server?.stop());

  it('a statement that waits past statement_timeout answers 503 with Retry-After, and the same request succeeds later', async () => {
    const reply = await holding(server.database.url, 'lock table calls in access exclusive mode', async () => {
      const started = performance.now();
      const answer = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId } });
      return { ...answer, ms: performance.now() - started };
    });
    expect(reply.status, reply.text).toBe(503);
    expect(reply.ms).toBeGreaterThanOrEqual(STATEMENT_MS - 50);
    expect(reply.ms).toBeLessThan(STATEMENT_MS + 2_000);
    expect(reply.headers.get('retry-after')).toBe('5');
    expect(reply.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: expect.stringMatching(/database/i) });
    const again = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId } });
    expect(again.status, again.text).toBe(200);
    expect(again.body.calls).toHaveLength(1);
  });

  it('a transaction left idle past idle_in_transaction_session_timeout is ended by the database, releasing its locks', async () => {
    const em = unitOfWork(server.server.services.orm);
    const failure = await em
      .transactional(async (tx) => {
        await sqlRows(tx, sql`select id from calls where project_id = ${projectId} for update`);
        await sleep(IDLE_MS * 3); // a stalled process, holding the row lock
        await sqlRows(tx, sql`select 1`);
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure, 'the transaction survived').toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(failure), String(failure)).toBe(true);
    // The lock is gone, and the pool still serves.
    await withClient(server.database.url, (c) => c.query('select id from calls where project_id = $1 for update nowait', [projectId]));
    const after = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId } });
    expect(after.status, after.text).toBe(200);
  });

  it('a write whose connection is terminated mid-transaction answers 503, and the pool does not lose the connection', async () => {
    // More failures than the pool has connections: each one lost for good would leave nothing.
    for (let attempt = 0; attempt < 4; attempt++) {
      const reply = await holding(server.database.url, 'lock table projects in access exclusive mode', async (client) => {
        const pending = rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: `doomed-${attempt}` } });
        const pid = await waitingBackend(client).catch(async (error: Error) => {
          const answered = await pending;
          throw new Error(`${error.message}; the request answered ${answered.status} ${answered.text}`);
        });
        await client.query('select pg_terminate_backend($1)', [pid]);
        return pending;
      });
      expect(reply.status, reply.text).toBe(503);
    }
    const created = await rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: 'survivor' } });
    expect(created.status, created.text).toBe(200);
    const names = await withClient(server.database.url, async (c) => (await c.query('select name from annotation_queues')).rows.map((r) => r.name));
    expect(names).toEqual(['survivor']);
  });
});
