import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { eventually, recordEvents } from '../harness/queue-events.ts';
import { claim, createQueue, progress, queueWithItems, uniqueId } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// annotationQueues.projectEvents, an addition beyond contract 5.8: the events of every queue of a
// project on one stream, with a queue's creation and deletion as queue_updated.

const LIVE_MS = 2_000;
const newProject = () => `acme/${uniqueId('proj').replace(/-/g, '')}`;

describeEachBackend('live project events', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;
  const subscribers = () => server.server.services.queueEvents.subscriberCount;
  const openStreams = () => server.server.services.eventStreams.open;

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    outsider = await createUser(server, { entity: 'other', role: 'member' });
  });
  afterAll(async () => server?.stop());

  it("yields the events of every queue of the project on one stream within 2 s, not another project's; a viewer may subscribe", async () => {
    const projectId = newProject();
    const elsewhere = newProject();
    const first = await queueWithItems(server, member.api_key, projectId, 1);
    const second = await queueWithItems(server, member.api_key, projectId, 1);
    const foreign = await queueWithItems(server, member.api_key, elsewhere, 1);
    const live = recordEvents(client(server, viewer.api_key), { project_id: projectId });
    await live.started;
    try {
      // One stream, counted once.
      expect(subscribers()).toBe(1);
      expect(openStreams()).toBe(1);

      const claimed = await claim(server, member.api_key, projectId, first.queueId);
      expect(claimed.status).toBe(200);
      let seen = await live.next((e) => e.queue_id === first.queueId && e.type === 'progress', 0);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      // The same event objects as a queue's stream: nothing of the project added.
      expect(seen.event).toEqual({ type: 'progress', queue_id: first.queueId, item_id: first.items[0]!.id, at: expect.any(String) });

      // Another project's writes, then one to the second queue: only the latter arrives.
      expect((await claim(server, member.api_key, elsewhere, foreign.queueId)).status).toBe(200);
      expect((await rest(server, 'PUT', `/annotation_queues/${foreign.queueId}`, { key: member.api_key, body: { project_id: elsewhere, name: 'elsewhere' } })).status).toBe(200);
      let from = live.events.length;
      expect((await progress(server, member.api_key, projectId, second.queueId, second.items[0]!.id, 'skipped')).status).toBe(200);
      seen = await live.next((e) => e.queue_id === second.queueId, from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event).toMatchObject({ type: 'progress', queue_id: second.queueId, item_id: second.items[0]!.id });
      expect(live.events.map((e) => e.queue_id)).not.toContain(foreign.queueId);

      // A queue created in the project and one deleted: each a queue_updated of it.
      from = live.events.length;
      const created = await createQueue(server, member.api_key, projectId, { name: 'appeared' });
      seen = await live.next((e) => e.queue_id === created, from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event).toEqual({ type: 'queue_updated', queue_id: created, at: expect.any(String) });
      from = live.events.length;
      expect((await rest(server, 'DELETE', `/annotation_queues/${first.queueId}?project_id=${projectId}`, { key: member.api_key })).status).toBe(200);
      seen = await live.next((e) => e.queue_id === first.queueId, from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event.type).toBe('queue_updated');
      expect(live.error()).toBeUndefined();
    } finally {
      live.stop();
    }
    await eventually(subscribers, 0);
    await eventually(openStreams, 0);
  });

  it('reaches the streams of the queue and of its project alike from one write', async () => {
    const projectId = newProject();
    const { queueId, items } = await queueWithItems(server, member.api_key, projectId, 1);
    const ofQueue = recordEvents(client(server, member.api_key), { project_id: projectId, queue_id: queueId });
    const ofProject = recordEvents(client(server, member.api_key), { project_id: projectId });
    await Promise.all([ofQueue.started, ofProject.started]);
    try {
      expect((await progress(server, member.api_key, projectId, queueId, items[0]!.id, 'completed')).status).toBe(200);
      const [a, b] = await Promise.all([ofQueue.next((e) => e.type === 'progress', 0), ofProject.next((e) => e.type === 'progress', 0)]);
      expect(b.event).toEqual(a.event);
    } finally {
      ofQueue.stop();
      ofProject.stop();
    }
  });

  it('authorizes like reading the project: 401, 403, 400 with a reason', async () => {
    const cases: { key: string; input: { project_id: string }; status: number }[] = [
      { key: 'lp_not-a-key', input: { project_id: 'acme/live' }, status: 401 },
      { key: outsider.api_key, input: { project_id: 'acme/live' }, status: 403 },
      { key: member.api_key, input: { project_id: 'not a project' }, status: 400 },
    ];
    for (const { key, input, status } of cases) {
      const live = recordEvents(client(server, key), input);
      const error = await live.failure();
      expect(error.data?.httpStatus, error.message).toBe(status);
      expect((error.shape as { reason?: string }).reason).toEqual(expect.any(String));
      live.stop();
    }
    await eventually(subscribers, 0);
  });
});

describeEachBackend('live project event limits', (backend) => {
  let server: TestServer;
  const MAX_LIFE_MS = 1_000;

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_EVENT_STREAMS_PER_KEY: '2', LOUPE_EVENT_STREAM_MAX_LIFE_MS: String(MAX_LIFE_MS) });
  });
  afterAll(async () => server?.stop());

  it("counts toward the key's stream limit like a queue's stream (429), and is renewed like one", async () => {
    const owner = await createUser(server, { entity: 'acme', role: 'member' });
    const follower = await createUser(server, { entity: 'acme', role: 'viewer' });
    const projectId = newProject();
    const queueId = await createQueue(server, owner.api_key, projectId);
    const ofQueue = recordEvents(client(server, follower.api_key), { project_id: projectId, queue_id: queueId });
    const starts: number[] = [];
    const ofProject = recordEvents(client(server, follower.api_key), { project_id: projectId }, () => starts.push(Date.now()));
    await Promise.all([ofQueue.started, ofProject.started]);
    const third = recordEvents(client(server, follower.api_key), { project_id: projectId });
    try {
      const refused = await third.failure();
      expect(refused.data?.httpStatus).toBe(429);
      expect((refused.shape as { reason: string }).reason).toMatch(/^This API key already holds as many open event streams as one key may \(2\)/);

      // Renewed (the client reconnects and is authenticated again), and events flow on the new stream.
      await eventually(() => starts.length >= 2, true, MAX_LIFE_MS + 6_000);
      const from = ofProject.events.length;
      expect((await rest(server, 'PUT', `/annotation_queues/${queueId}`, { key: owner.api_key, body: { project_id: projectId, description: 'renewed' } })).status).toBe(200);
      expect((await ofProject.next((e) => e.type === 'queue_updated', from)).waitedMs).toBeLessThan(LIVE_MS);
      expect(ofProject.error()).toBeUndefined();
    } finally {
      for (const stream of [ofQueue, ofProject, third]) stream.stop();
    }
    await eventually(() => server.server.services.eventStreams.open, 0);
  });
});
