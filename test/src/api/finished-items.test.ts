import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { claim, progress, projectQuery, queueWithItems, TIMESTAMP, type Item } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// POST /annotation_queues/{queue_id}/items/finished: the caller's own finished items, the latest
// finished first, with the caller's own state — what the web app's "previous item" walks back through.

const PROJECT = 'acme/finished';

describeEachBackend('the caller’s finished items', (backend) => {
  let server: TestServer;
  let alice: CreatedKeyForTest;
  let bob: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    alice = await createUser(server, { entity: 'acme', role: 'member' });
    bob = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    outsider = await createUser(server, { entity: 'other', role: 'member' });
  });
  afterAll(() => server?.stop());

  const finished = (key: string, queueId: string, body: Record<string, unknown> = {}) =>
    rest(server, 'POST', `/annotation_queues/${queueId}/items/finished`, { key, body: { project_id: PROJECT, ...body } });
  const finish = async (key: string, queueId: string, item: Item, state: 'completed' | 'skipped') => {
    const reply = await progress(server, key, PROJECT, queueId, item.id, state);
    expect(reply.status, reply.text).toBe(200);
  };

  it('lists only the caller’s completed and skipped items, latest finished first, with the caller’s own state; pages by cursor', async () => {
    const { queueId, items } = await queueWithItems(server, alice.api_key, PROJECT, 6, { annotations_per_item: 2 });
    await finish(alice.api_key, queueId, items[2]!, 'completed');
    await finish(alice.api_key, queueId, items[0]!, 'skipped');
    await finish(bob.api_key, queueId, items[1]!, 'completed');
    await finish(alice.api_key, queueId, items[3]!, 'completed');
    // Bob finishes item 2 after alice: its shown state is bob's, alice's stays hers.
    await finish(bob.api_key, queueId, items[2]!, 'skipped');
    // An item alice holds is not finished; a deleted one is not listed.
    expect((await claim(server, alice.api_key, PROJECT, queueId)).body.item.id).toBe(items[1]!.id);
    await finish(alice.api_key, queueId, items[4]!, 'completed');
    expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/${items[4]!.id}${projectQuery(PROJECT)}`, { key: alice.api_key })).status).toBe(200);

    const reply = await finished(alice.api_key, queueId);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.next_cursor).toBeNull();
    const view = (list: { item: Item; annotation_state: string }[]) => list.map(({ item, annotation_state }) => [item.id, annotation_state]);
    expect(view(reply.body.finished)).toEqual([
      [items[3]!.id, 'completed'],
      [items[0]!.id, 'skipped'],
      [items[2]!.id, 'completed'],
    ]);
    const [latest, , earliest] = reply.body.finished;
    expect(earliest.item).toMatchObject({ call_id: items[2]!.call_id, annotation_state: 'skipped', annotator_user_id: bob.user_id });
    expect(latest.finished_at).toMatch(TIMESTAMP);
    expect(latest.finished_at >= earliest.finished_at).toBe(true);

    // A state filter, and bob's own list.
    expect(view((await finished(alice.api_key, queueId, { annotation_states: ['completed'] })).body.finished)).toEqual([
      [items[3]!.id, 'completed'],
      [items[2]!.id, 'completed'],
    ]);
    expect(view((await finished(bob.api_key, queueId)).body.finished)).toEqual([
      [items[2]!.id, 'skipped'],
      [items[1]!.id, 'completed'],
    ]);

    // One at a time by cursor: the same order, no repeats, and the last page says it is the last.
    const walked: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await finished(alice.api_key, queueId, { limit: 1, ...(cursor ? { cursor } : {}) });
      expect(page.status, page.text).toBe(200);
      walked.push(...page.body.finished.map((entry: { item: Item }) => entry.item.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(walked).toEqual([items[3]!.id, items[0]!.id, items[2]!.id]);

    // A cursor is bound to its caller and filter.
    const first = (await finished(alice.api_key, queueId, { limit: 1 })).body.next_cursor as string;
    for (const [key, body] of [
      [bob.api_key, { cursor: first }],
      [alice.api_key, { cursor: first, annotation_states: ['skipped'] }],
    ] as const) {
      const refused = await finished(key, queueId, body);
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.reason).toMatch(/cursor does not belong to this query/);
    }
  });

  it('answers a viewer with an empty list, and refuses a missing queue, another entity and bad input with a reason', async () => {
    const { queueId } = await queueWithItems(server, alice.api_key, PROJECT, 1);
    const empty = await finished(viewer.api_key, queueId);
    expect([empty.status, empty.body]).toEqual([200, { finished: [], next_cursor: null }]);
    const cases: [string, string, Record<string, unknown>, number][] = [
      [alice.api_key, 'no-such-queue', {}, 404],
      [outsider.api_key, queueId, {}, 403],
      [alice.api_key, queueId, { annotation_states: ['in_progress'] }, 400],
      [alice.api_key, queueId, { annotation_states: [] }, 400],
      [alice.api_key, queueId, { limit: 10_001 }, 400],
      [alice.api_key, queueId, { cursor: 'x'.repeat(100) }, 400],
      [alice.api_key, queueId, { offset: 1 }, 400],
    ];
    for (const [key, queue, body, status] of cases) {
      const reply = await finished(key, queue, body);
      expect(reply.status, `${JSON.stringify(body)}: ${reply.text}`).toBe(status);
      expect(typeof reply.body.reason).toBe('string');
    }
  });
});
