import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserViaCli, startChildServer, type ChildServer, type CliUser } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, withClient, type TestDatabase } from '../harness/databases.ts';
import { client, rest } from '../harness/http.ts';
import { eventually, recordEvents } from '../harness/queue-events.ts';
import { claim, progress, queueWithItems } from '../harness/queues.ts';

// Contract 5.8 across processes: two servers on one PostgreSQL database, each its own process; a
// write on one reaches subscribers of the other, of the queue or of its project, through the
// database (NOTIFY/LISTEN).

const NAME = 'live queue events across two server processes [postgresql]';
const LIVE_MS = 2_000;
const projectId = 'acme/two';

(postgresAvailable ? describe : describe.skip)(postgresAvailable ? NAME : `${NAME} — SKIPPED: TEST_DATABASE_URL is unset`, () => {
  let database: TestDatabase;
  const servers: ChildServer[] = [];
  let annotator: CliUser;
  let watcher: CliUser;

  beforeAll(async () => {
    database = await freshDatabase('postgresql');
    // One after the other: each migrates the database at start-up.
    for (let i = 0; i < 2; i++) servers.push(await startChildServer({ databaseUrl: database.url }));
    annotator = await createUserViaCli(database.url, { entity: 'acme', role: 'member' });
    watcher = await createUserViaCli(database.url, { entity: 'acme', role: 'viewer' });
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await database?.drop();
  });

  it('a write on one process reaches a subscriber of the other within 2 s, both ways', async () => {
    const [a, b] = servers as [ChildServer, ChildServer];
    expect(a.child.pid).not.toBe(b.child.pid);
    const { queueId, items } = await queueWithItems(a, annotator.api_key, projectId, 2);
    const onA = recordEvents(client(a, watcher.api_key), { project_id: projectId, queue_id: queueId });
    const onB = recordEvents(client(b, watcher.api_key), { project_id: projectId, queue_id: queueId });
    await Promise.all([onA.started, onB.started]);
    try {
      const claimed = await claim(a, annotator.api_key, projectId, queueId);
      expect(claimed.status).toBe(200);
      const first = claimed.body.item.id as string;
      expect(first).toBe(items[0]!.id);
      const fromB = await onB.next((e) => e.type === 'progress' && e.item_id === first, 0);
      expect(fromB.waitedMs).toBeLessThan(LIVE_MS);

      // The other way: written on B, seen on A (and on B itself).
      const from = onA.events.length;
      expect((await progress(b, annotator.api_key, projectId, queueId, first, 'completed')).status).toBe(200);
      const fromA = await onA.next((e) => e.type === 'progress' && e.item_id === first, from);
      expect(fromA.waitedMs).toBeLessThan(LIVE_MS);
      await onB.next((e) => e.type === 'progress', onB.events.length - 1);
    } finally {
      onA.stop();
      onB.stop();
    }
  });

  it("a project's stream on one process hears the writes to each of its queues made on the other, and not another project's", async () => {
    const [a, b] = servers as [ChildServer, ChildServer];
    const first = await queueWithItems(a, annotator.api_key, projectId, 1);
    const second = await queueWithItems(b, annotator.api_key, projectId, 1);
    const foreign = await queueWithItems(a, annotator.api_key, 'acme/elsewhere', 1);
    const onB = recordEvents(client(b, watcher.api_key), { project_id: projectId });
    const onA = recordEvents(client(a, watcher.api_key), { project_id: projectId });
    await Promise.all([onA.started, onB.started]);
    try {
      expect((await claim(a, annotator.api_key, 'acme/elsewhere', foreign.queueId)).status).toBe(200);
      expect((await claim(a, annotator.api_key, projectId, first.queueId)).status).toBe(200);
      const fromB = await onB.next((e) => e.queue_id === first.queueId && e.type === 'progress', 0);
      expect(fromB.waitedMs).toBeLessThan(LIVE_MS);
      expect(fromB.event).toEqual({ type: 'progress', queue_id: first.queueId, item_id: first.items[0]!.id, at: expect.any(String) });

      const from = onA.events.length;
      expect((await progress(b, annotator.api_key, projectId, second.queueId, second.items[0]!.id, 'skipped')).status).toBe(200);
      const fromA = await onA.next((e) => e.queue_id === second.queueId && e.type === 'progress', from);
      expect(fromA.waitedMs).toBeLessThan(LIVE_MS);
      await onB.next((e) => e.queue_id === second.queueId, 0);
      for (const live of [onA, onB]) expect(live.events.map((e) => e.queue_id)).not.toContain(foreign.queueId);
    } finally {
      onA.stop();
      onB.stop();
    }
  });

  it('a process whose LISTEN connection is cut reconnects, tells its subscribers to refetch, and hears writes again', async () => {
    const [a, b] = servers as [ChildServer, ChildServer];
    const { queueId } = await queueWithItems(a, annotator.api_key, projectId, 1);
    const onB = recordEvents(client(b, watcher.api_key), { project_id: projectId, queue_id: queueId });
    const starts: number[] = [];
    const projectOnB = recordEvents(client(b, watcher.api_key), { project_id: projectId }, () => starts.push(Date.now()));
    await Promise.all([onB.started, projectOnB.started]);
    try {
      const cut = await withClient(database.url, async (pg) =>
        (await pg.query(`select pg_terminate_backend(pid) as done from pg_stat_activity where application_name = 'loupe-events' and datname = current_database()`)).rows,
      );
      expect(cut.length).toBe(2); // one LISTEN connection per process
      // What happened while it was down is unknown: a queue_updated makes clients refetch.
      // A project's stream, which cannot name every queue that may have changed, is renewed:
      // its client reconnects and reads everything again.
      await onB.next((e) => e.type === 'queue_updated', 0, 10_000);
      await eventually(() => starts.length >= 2, true, 10_000);
      const from = onB.events.length;
      const fromProject = projectOnB.events.length;
      expect((await rest(a, 'PUT', `/annotation_queues/${queueId}`, { key: annotator.api_key, body: { project_id: projectId, description: 'after the cut' } })).status).toBe(200);
      const seen = await onB.next((e) => e.type === 'queue_updated', from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect((await projectOnB.next((e) => e.queue_id === queueId && e.type === 'queue_updated', fromProject)).waitedMs).toBeLessThan(LIVE_MS);
      expect(projectOnB.error()).toBeUndefined();
      expect(b.logs.some((line) => line.msg === 'queue events: the LISTEN connection was lost; reconnecting')).toBe(true);
    } finally {
      onB.stop();
      projectOnB.stop();
    }
  });

  it('a stopping process ends its open streams at once instead of waiting out the shutdown timeout', async () => {
    const b = servers[1]!;
    const { queueId } = await queueWithItems(servers[0]!, annotator.api_key, projectId, 1);
    const onB = recordEvents(client(b, watcher.api_key), { project_id: projectId, queue_id: queueId });
    await onB.started;
    const begun = Date.now();
    const exit = await b.stop('SIGTERM');
    onB.stop();
    expect(exit.code).toBe(0);
    expect(Date.now() - begun).toBeLessThan(2_000); // the shutdown timeout is 10 s
  });
});
