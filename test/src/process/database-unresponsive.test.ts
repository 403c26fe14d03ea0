import { createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserViaCli, startChildServer, type ChildServer } from '../harness/child-server.ts';
import { withClient } from '../harness/databases.ts';
import { rest, type CallOptions, type Reply } from '../harness/http.ts';
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from '../harness/private-postgres.ts';

const NAME = 'an unresponsive database: bounded waits [postgresql, private instance]';
const unavailable = privatePostgresUnavailable();

// Short limits, so that the bounds are quick to check.
const CONNECT_MS = 1_000;
const STATEMENT_MS = 1_500;
const ENV = {
  LOUPE_DB_CONNECT_TIMEOUT_MS: String(CONNECT_MS),
  LOUPE_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_MS),
  // Two connections: a connection lost by a failed request would show at once.
  LOUPE_DB_POOL_SIZE: '2',
};
// The longest a request may take to fail: a free connection (connect timeout), then a statement
// that gets no answer (statement timeout, plus the client's one second), plus scheduling slack.
const BOUND_MS = CONNECT_MS + STATEMENT_MS + 1_000 + 1_500;
// Without the bounds a request would hang: give up on it well after BOUND_MS.
const HANG_MS = 20_000;
const RECOVERY_DEADLINE_MS = 30_000;

/** A REST call and how long its answer took. */
async function timed(server: { url: string }, method: string, path: string, options: CallOptions = {}): Promise<Reply & { ms: number }> {
  const started = performance.now();
  const reply = await rest(server, method, path, { ...options, signal: AbortSignal.timeout(HANG_MS) });
  return { ...reply, ms: performance.now() - started };
}

function expectBoundedUnavailable(reply: Reply & { ms: number }, what: string): void {
  expect(reply.status, `${what}: ${reply.text}`).toBe(503);
  expect(reply.ms, `${what} answered after ${Math.round(reply.ms)} ms`).toBeLessThan(BOUND_MS);
  expect(Number(reply.headers.get('retry-after')), `${what}: Retry-After`).toBeGreaterThan(0);
  expect(reply.body, what).toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: expect.stringMatching(/database/i) });
  expect(reply.text, what).not.toMatch(/timeout|ECONN|stack|postgres/i);
}

/** A TCP listener that accepts connections and never sends a byte: a black-holed database. */
async function blackHole(port: number): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

(unavailable ? describe.skip : describe)(unavailable ? `${NAME} — SKIPPED: ${unavailable}` : NAME, () => {
  let postgres: PrivatePostgres | undefined;
  let server: ChildServer | undefined;
  let key: string;
  const projectId = 'acme/unresponsive';

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    ({ api_key: key } = await createUserViaCli(postgres.url, { entity: 'acme', role: 'member' }));
    server = await startChildServer({ databaseUrl: postgres.url, env: ENV });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await postgres?.destroy();
  });

  const createQueue = (name: string) =>
    timed(server!, 'POST', '/annotation_queues', { key, body: { project_id: projectId, name } });
  const queueNames = () =>
    withClient(postgres!.url, async (db) => (await db.query<{ name: string }>('select name from annotation_queues order by name')).rows.map((r) => r.name));

  async function recovers(): Promise<void> {
    const started = Date.now();
    let last: Reply | undefined;
    while (Date.now() - started < RECOVERY_DEADLINE_MS) {
      const [me, ready, write] = await Promise.all([
        rest(server!, 'GET', '/me', { key }),
        rest(server!, 'GET', '/ready'),
        rest(server!, 'POST', '/annotation_queues', { key, body: { project_id: projectId, name: `after-${Date.now()}` } }),
      ]);
      last = [me, ready, write].find((reply) => reply.status !== 200);
      if (!last) return;
      await sleep(250);
    }
    expect.fail(`no recovery within ${RECOVERY_DEADLINE_MS} ms: ${last?.status} ${last?.text}`);
  }

  it('serves while the database answers', async () => {
    expect((await createQueue('before')).status).toBe(200);
    expect((await timed(server!, 'GET', '/ready')).status).toBe(200);
  });

  it('answers 503 within the bound while the database is paused, and recovers when it resumes', async () => {
    postgres!.pause();
    try {
      expectBoundedUnavailable(await timed(server!, 'GET', '/me', { key }), 'GET /me');
      expectBoundedUnavailable(await timed(server!, 'GET', '/ready'), 'GET /ready');
      expectBoundedUnavailable(await createQueue('paused-1'), 'a write');
      // More requests at once than the pool has connections: those that wait for one are bounded too.
      const burst = await Promise.all(Array.from({ length: 6 }, (_, i) => createQueue(`paused-burst-${i}`)));
      burst.forEach((reply, i) => expectBoundedUnavailable(reply, `write ${i} of a burst`));
      expectBoundedUnavailable(await timed(server!, 'GET', '/ready'), 'GET /ready, again');
    } finally {
      postgres!.resume();
    }
    // Every connection that failed went back, or was replaced: writes work again, with two connections.
    await recovers();
    expect((await queueNames()).filter((name) => name.startsWith('paused'))).toEqual([]);
  });

  it('answers 503 within the bound while the database accepts connections and never answers, and recovers', async () => {
    await postgres!.stop();
    const hole = await blackHole(postgres!.port);
    try {
      expectBoundedUnavailable(await timed(server!, 'GET', '/me', { key }), 'GET /me');
      expectBoundedUnavailable(await timed(server!, 'GET', '/ready'), 'GET /ready');
      expectBoundedUnavailable(await createQueue('black-hole'), 'a write');
    } finally {
      await hole.close();
    }
    await postgres!.start();
    await recovers();
    expect(await queueNames()).not.toContain('black-hole');
    expect(server!.child.exitCode).toBeNull();
  });
});
