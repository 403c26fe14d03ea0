import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { progress, projectQuery, queueWithItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// `POST /annotation_queues/{queue_id}/items/annotations` (issue 25 point 2): per item, its
// annotators who completed or skipped it against its quota, `annotations_required` (contract
// 5.11's name; the queue's annotations_per_item until per-item overlap lands).

describeEachBackend('item annotation counts', (backend) => {
  let server: TestServer;
  let alice: CreatedKeyForTest;
  let bob: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let stranger: CreatedKeyForTest;
  const project = 'acme/counts';

  beforeAll(async () => {
    server = await startTestServer(backend);
    alice = await createUser(server, { entity: 'acme', role: 'member' });
    bob = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    stranger = await createUser(server, { entity: 'globex', role: 'member' });
  });
  afterAll(() => server?.stop());

  const ask = (key: string, queueId: string, itemIds: unknown) =>
    rest(server, 'POST', `/annotation_queues/${queueId}/items/annotations`, { key, body: { project_id: project, item_ids: itemIds } });

  it('counts completed and skipped annotators, not those in progress; unknown and deleted items are left out; order as asked', async () => {
    const { queueId, items } = await queueWithItems(server, alice.api_key, project, 4, { annotations_per_item: 3 });
    const [a, b, c, d] = items.map((item) => item.id) as [string, string, string, string];
    for (const [key, item, state] of [[alice, a, 'completed'], [bob, a, 'skipped'], [alice, b, 'in_progress'], [bob, c, 'completed']] as const) {
      expect((await progress(server, key.api_key, project, queueId, item, state)).status).toBe(200);
    }
    expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/${d}${projectQuery(project)}`, { key: alice.api_key })).status).toBe(200);
    const reply = await ask(viewer.api_key, queueId, [c, a, 'no-such-item', b, d, a]);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({
      items: [
        { item_id: c, annotations_done: 1, annotations_required: 3 },
        { item_id: a, annotations_done: 2, annotations_required: 3 },
        { item_id: b, annotations_done: 0, annotations_required: 3 },
      ],
    });
  });

  it('refuses another entity (403), an unknown queue (404), and more than 1,000 ids (400), each with a reason', async () => {
    const { queueId, items } = await queueWithItems(server, alice.api_key, project, 1);
    const forbidden = await ask(stranger.api_key, queueId, [items[0]!.id]);
    expect(forbidden.status).toBe(403);
    const missing = await ask(alice.api_key, 'no-such-queue', [items[0]!.id]);
    expect(missing.status).toBe(404);
    const many = await ask(alice.api_key, queueId, Array.from({ length: 1001 }, (_, n) => `item-${n}`));
    expect(many.status).toBe(400);
    const none = await ask(alice.api_key, queueId, []);
    expect(none.status).toBe(400);
    for (const reply of [forbidden, missing, many, none]) expect(reply.body.reason, reply.text).toEqual(expect.any(String));
  });
});
