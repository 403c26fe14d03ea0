import { revokeKey, sql, sqlRun, unitOfWork } from '@loupe/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { basic, client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { eventually, recordEvents } from '../harness/queue-events.ts';
import { claim, createQueue, createSomeCalls, progress, queueWithItems, addItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Contract 5.8: annotationQueues.events, a tRPC subscription over server-sent events.

const LIVE_MS = 2_000;

describeEachBackend('live queue events', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;
  const projectId = 'acme/live';
  const subscribers = () => server.server.services.queueEvents.subscriberCount;
  const openStreams = () => server.server.services.eventStreams.open;

  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    outsider = await createUser(server, { entity: 'other', role: 'member' });
  });
  afterAll(async () => server?.stop());

  it('yields every kind of change of the queue within 2 s, ids only; a viewer may subscribe', async () => {
    const { queueId } = await queueWithItems(server, member.api_key, projectId, 2);
    const live = recordEvents(client(server, viewer.api_key), { project_id: projectId, queue_id: queueId });
    await live.started;
    const shape = (event: object) => expect(Object.keys(event).sort()).toEqual(expect.arrayContaining(['at', 'queue_id', 'type']));
    try {
      let from = live.events.length;
      const [call] = await createSomeCalls(server, member.api_key, projectId, 1);
      await addItems(server, member.api_key, projectId, queueId, [call!]);
      let seen = await live.next((e) => e.type === 'items_added', from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event).toEqual({ type: 'items_added', queue_id: queueId, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });

      from = live.events.length;
      const claimed = await claim(server, member.api_key, projectId, queueId);
      expect(claimed.status).toBe(200);
      const itemId = claimed.body.item.id as string;
      seen = await live.next((e) => e.type === 'progress', from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event).toMatchObject({ type: 'progress', queue_id: queueId, item_id: itemId });

      from = live.events.length;
      expect((await progress(server, member.api_key, projectId, queueId, itemId, 'completed')).status).toBe(200);
      seen = await live.next((e) => e.type === 'progress', from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event).toMatchObject({ type: 'progress', queue_id: queueId, item_id: itemId });

      from = live.events.length;
      expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/${itemId}?project_id=${projectId}`, { key: member.api_key })).status).toBe(200);
      seen = await live.next((e) => e.type === 'items_deleted', from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event).toMatchObject({ type: 'items_deleted', queue_id: queueId, item_id: itemId });

      from = live.events.length;
      const put = await rest(server, 'PUT', `/annotation_queues/${queueId}`, { key: member.api_key, body: { project_id: projectId, description: 'live' } });
      expect(put.status).toBe(200);
      seen = await live.next((e) => e.type === 'queue_updated', from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      expect(seen.event).toEqual({ type: 'queue_updated', queue_id: queueId, at: expect.any(String) });

      from = live.events.length;
      expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}?project_id=${projectId}`, { key: member.api_key })).status).toBe(200);
      seen = await live.next((e) => e.type === 'queue_updated', from);
      expect(seen.waitedMs).toBeLessThan(LIVE_MS);
      live.events.forEach(shape);
      expect(live.error()).toBeUndefined();
    } finally {
      live.stop();
    }
  });

  it('sends nothing for a write that fails or changes nothing, nor for other queues', async () => {
    const { queueId, items } = await queueWithItems(server, member.api_key, projectId, 1);
    const other = await queueWithItems(server, member.api_key, projectId, 1);
    const live = recordEvents(client(server, member.api_key), { project_id: projectId, queue_id: queueId });
    await live.started;
    try {
      const item = items[0]!;
      expect((await progress(server, member.api_key, projectId, queueId, item.id, 'skipped')).status).toBe(200);
      await live.next((e) => e.type === 'progress', 0);
      const after = live.events.length;
      // The same state again (nothing written), a refused transition, a write to another queue.
      expect((await progress(server, member.api_key, projectId, queueId, item.id, 'skipped')).status).toBe(200);
      expect((await progress(server, member.api_key, projectId, queueId, item.id, 'completed')).status).toBe(400);
      expect((await progress(server, member.api_key, projectId, other.queueId, other.items[0]!.id, 'completed')).status).toBe(200);
      // A marker write last: every event before it has arrived when it has.
      const put = await rest(server, 'PUT', `/annotation_queues/${queueId}`, { key: member.api_key, body: { project_id: projectId, name: 'marker' } });
      expect(put.status).toBe(200);
      await live.next((e) => e.type === 'queue_updated', after);
      expect(live.events.slice(after).map((e) => e.type)).toEqual(['queue_updated']);
    } finally {
      live.stop();
    }
  });

  it('gives back its subscriber and its slot when the client unsubscribes', async () => {
    const queueId = await createQueue(server, member.api_key, projectId);
    await eventually(subscribers, 0);
    const before = { subscribers: subscribers(), open: openStreams() };
    const streams = [1, 2, 3].map(() => recordEvents(client(server, member.api_key), { project_id: projectId, queue_id: queueId }));
    await Promise.all(streams.map((s) => s.started));
    expect(subscribers()).toBe(before.subscribers + 3);
    expect(openStreams()).toBe(before.open + 3);
    const metrics = await rest(server, 'GET', '/metrics', { key: member.api_key });
    expect(metrics.text).toMatch(new RegExp(`^loupe_event_streams_open ${before.open + 3}$`, 'm'));
    for (const stream of streams) stream.stop();
    await eventually(subscribers, before.subscribers);
    await eventually(openStreams, before.open);
  });

  it('authorizes like reading the queue: 401, 403, 404, 400 with a reason', async () => {
    const queueId = await createQueue(server, member.api_key, projectId);
    const cases: { key: string; input: { project_id: string; queue_id: string }; status: number }[] = [
      { key: 'lp_not-a-key', input: { project_id: projectId, queue_id: queueId }, status: 401 },
      { key: outsider.api_key, input: { project_id: projectId, queue_id: queueId }, status: 403 },
      { key: member.api_key, input: { project_id: projectId, queue_id: 'no-such-queue' }, status: 404 },
      { key: member.api_key, input: { project_id: 'not a project', queue_id: queueId }, status: 400 },
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

  it('is served at the typed door only: no REST route, not in the OpenAPI document', async () => {
    const queueId = await createQueue(server, member.api_key, projectId);
    expect((await rest(server, 'GET', `/annotation_queues/${queueId}/events?project_id=${projectId}`, { key: member.api_key })).status).toBe(404);
    // No operation of the document streams queue events (webhooks have a field named `events`; no operation is a queue event stream).
    const document = (await rest(server, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { operationId?: string }>> };
    expect(Object.keys(document.paths).filter((path) => path.includes('events'))).toEqual([]);
    const operationIds = Object.values(document.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId ?? ''));
    expect(operationIds.filter((id) => /events/i.test(id))).toEqual([]);
  });

  it('sends the key in the Authorization header, never in the URL', async () => {
    const queueId = await createQueue(server, member.api_key, projectId);
    const live = recordEvents(client(server, member.api_key), { project_id: projectId, queue_id: queueId });
    await live.started;
    live.stop();
    // The access line is written when the stream's response ends.
    const streamLines = () => server.logs.filter((l) => typeof l.url === 'string' && decodeURIComponent(l.url as string).includes(queueId));
    await eventually(() => streamLines().length > 0, true);
    for (const line of streamLines()) {
      expect(line.url as string).toMatch(/^\/trpc\/annotationQueues\.events\?input=/);
      expect(decodeURIComponent(line.url as string)).not.toContain(member.api_key);
    }
  });
});

describe('live queue event stream on the wire [sqlite]', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(async () => server?.stop());

  it('is a server-sent event stream that proxies neither buffer nor cache, with a ping at least every 10 s', async () => {
    const owner = await createUser(server, { entity: 'acme', role: 'member' });
    const queueId = await createQueue(server, owner.api_key, 'acme/wire');
    const input = encodeURIComponent(JSON.stringify({ project_id: 'acme/wire', queue_id: queueId }));
    const stop = new AbortController();
    const response = await fetch(`${server.url}/trpc/annotationQueues.events?input=${input}`, {
      headers: { authorization: basic(owner.api_key), accept: 'text/event-stream', 'x-request-id': 'live-wire-1' },
      signal: stop.signal,
    });
    try {
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      expect(response.headers.get('cache-control')).toBe('no-cache, no-transform');
      expect(response.headers.get('x-accel-buffering')).toBe('no');
      expect(response.headers.get('x-request-id')).toBe('live-wire-1');
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      const begun = Date.now();
      while (!text.includes('event: ping')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
      // The first message says how long the client may hear nothing before it reconnects.
      expect(text).toContain('event: connected\ndata: {"reconnectAfterInactivityMs":30000}');
      expect(text).toContain('event: ping');
      expect(Date.now() - begun).toBeLessThan(11_000);
    } finally {
      stop.abort();
    }
    await eventually(() => server.server.services.eventStreams.open, 0);
  });
});

describeEachBackend('live queue event limits', (backend) => {
  let server: TestServer;
  const projectId = 'acme/caps';

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_EVENT_STREAMS_PER_KEY: '2', LOUPE_EVENT_STREAMS_PER_PROCESS: '3' });
  });
  afterAll(async () => server?.stop());

  it('refuses a stream over the per-key or per-process limit with 429 and a reason, and takes one again once a stream ends', async () => {
    const a = await createUser(server, { entity: 'acme', role: 'member' });
    const b = await createUser(server, { entity: 'acme', role: 'viewer' });
    const queueId = await createQueue(server, a.api_key, projectId);
    const input = { project_id: projectId, queue_id: queueId };
    const a1 = recordEvents(client(server, a.api_key), input);
    const a2 = recordEvents(client(server, a.api_key), input);
    await Promise.all([a1.started, a2.started]);

    const a3 = recordEvents(client(server, a.api_key), input);
    const perKey = await a3.failure();
    expect(perKey.data?.httpStatus).toBe(429);
    expect((perKey.shape as { reason: string; code: string }).reason).toMatch(/^This API key already holds as many open event streams as one key may \(2\)/);

    const b1 = recordEvents(client(server, b.api_key), input);
    await b1.started;
    const b2 = recordEvents(client(server, b.api_key), input);
    const perProcess = await b2.failure();
    expect(perProcess.data?.httpStatus).toBe(429);
    expect((perProcess.shape as { reason: string }).reason).toMatch(/as many open event streams as it serves/i);

    a1.stop();
    await eventually(() => server.server.services.eventStreams.open, 2);
    const b3 = recordEvents(client(server, b.api_key), input);
    await b3.started;
    for (const stream of [a2, a3, b1, b2, b3]) stream.stop();
    await eventually(() => server.server.services.eventStreams.open, 0);
  });
});

describeEachBackend('live queue event renewal', (backend) => {
  let server: TestServer;
  const projectId = 'acme/renewal';
  const MAX_LIFE_MS = 1_000;

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_EVENT_STREAM_MAX_LIFE_MS: String(MAX_LIFE_MS) });
  });
  afterAll(async () => server?.stop());

  it('renews a stream after its longest life: the client reconnects and is authenticated again, so a revoked key stops there', async () => {
    const owner = await createUser(server, { entity: 'acme', role: 'member' });
    const follower = await createUser(server, { entity: 'acme', role: 'viewer' });
    const queueId = await createQueue(server, owner.api_key, projectId);
    const starts: number[] = [];
    const live = recordEvents(client(server, follower.api_key), { project_id: projectId, queue_id: queueId }, () => starts.push(Date.now()));
    await live.started;
    try {
      // Renewed (a 503 the client answers by reconnecting), and events flow on the new stream.
      await eventually(() => starts.length >= 2, true, MAX_LIFE_MS + 6_000);
      await eventually(() => server.server.services.eventStreams.open, 1);
      const from = live.events.length;
      const put = await rest(server, 'PUT', `/annotation_queues/${queueId}`, { key: owner.api_key, body: { project_id: projectId, description: 'renewed' } });
      expect(put.status).toBe(200);
      expect((await live.next((e) => e.type === 'queue_updated', from)).waitedMs).toBeLessThan(LIVE_MS);
      expect(live.error()).toBeUndefined();
      expect(server.logs.filter((line) => line.msg === 'request failed')).toEqual([]);

      await revokeKey(unitOfWork(server.server.services.orm), follower.key_id);
      const refused = await live.failure(MAX_LIFE_MS + 6_000);
      expect(refused.data?.httpStatus).toBe(401);
      await eventually(() => server.server.services.eventStreams.open, 0);
    } finally {
      live.stop();
    }
  });
});

describeEachBackend('live queue event access re-check', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  let queueId: string;
  const projectId = 'acme/recheck';
  // The default re-check interval (LOUPE_EVENT_STREAM_RECHECK_MS, 5 s) and a renewal far away:
  // only the re-check can end these streams in time.
  const ENDED_WITHIN_MS = 10_000;

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_EVENT_STREAM_MAX_LIFE_MS: '600000' });
    owner = await createUser(server, { entity: 'acme', role: 'member' });
    queueId = await createQueue(server, owner.api_key, projectId);
  });
  afterAll(async () => server?.stop());

  it('ends the streams of a revoked key within 10 s with 401, and leaves the others open', async () => {
    const doomed = await createUser(server, { entity: 'acme', role: 'viewer' });
    const queueStream = recordEvents(client(server, doomed.api_key), { project_id: projectId, queue_id: queueId });
    const projectStream = recordEvents(client(server, doomed.api_key), { project_id: projectId });
    const bystander = recordEvents(client(server, owner.api_key), { project_id: projectId, queue_id: queueId });
    await Promise.all([queueStream.started, projectStream.started, bystander.started]);
    try {
      const revokedAt = Date.now();
      await revokeKey(unitOfWork(server.server.services.orm), doomed.key_id);
      for (const stream of [queueStream, projectStream]) {
        const refused = await stream.failure(ENDED_WITHIN_MS);
        expect(refused.data?.httpStatus).toBe(401);
        expect((refused.shape as { reason: string }).reason).toMatch(/revoked/);
      }
      expect(Date.now() - revokedAt).toBeLessThan(ENDED_WITHIN_MS);
      await eventually(() => server.server.services.eventStreams.open, 1);
      // The other key's stream still delivers.
      const from = bystander.events.length;
      const put = await rest(server, 'PUT', `/annotation_queues/${queueId}`, { key: owner.api_key, body: { project_id: projectId, description: 'after revocation' } });
      expect(put.status).toBe(200);
      await bystander.next((e) => e.type === 'queue_updated', from);
      expect(bystander.error()).toBeUndefined();
    } finally {
      for (const stream of [queueStream, projectStream, bystander]) stream.stop();
    }
    await eventually(() => server.server.services.eventStreams.open, 0);
  });

  it('ends the streams of a user who lost the membership within 10 s with 403', async () => {
    const leaver = await createUser(server, { entity: 'acme', role: 'viewer' });
    const stream = recordEvents(client(server, leaver.api_key), { project_id: projectId, queue_id: queueId });
    await stream.started;
    try {
      const removedAt = Date.now();
      await sqlRun(server.server.services.orm.em, sql`delete from memberships where user_id = ${leaver.user_id} and entity = ${'acme'}`);
      const refused = await stream.failure(ENDED_WITHIN_MS);
      expect(Date.now() - removedAt).toBeLessThan(ENDED_WITHIN_MS);
      expect(refused.data?.httpStatus).toBe(403);
      expect((refused.shape as { reason: string }).reason).toMatch(/not a member of entity "acme"/);
      await eventually(() => server.server.services.eventStreams.open, 0);
    } finally {
      stream.stop();
    }
  });
});

describe('live queue event settings', () => {
  it('are validated at start-up', async () => {
    const { loadConfig } = await import('@loupe/server');
    expect(() => loadConfig({ LOUPE_EVENT_STREAMS_PER_KEY: '0' })).toThrow(/LOUPE_EVENT_STREAMS_PER_KEY/);
    expect(() => loadConfig({ LOUPE_EVENT_STREAMS_PER_PROCESS: 'many' })).toThrow(/LOUPE_EVENT_STREAMS_PER_PROCESS/);
    expect(() => loadConfig({ LOUPE_EVENT_STREAM_MAX_LIFE_MS: '10' })).toThrow(/LOUPE_EVENT_STREAM_MAX_LIFE_MS/);
    expect(() => loadConfig({ LOUPE_EVENT_STREAM_RECHECK_MS: '0' })).toThrow(/LOUPE_EVENT_STREAM_RECHECK_MS/);
    expect(loadConfig({}).eventStreams).toEqual({ perKey: 20, perProcess: 2000, maxLifeMs: 300_000, recheckMs: 5_000 });
  });
});
