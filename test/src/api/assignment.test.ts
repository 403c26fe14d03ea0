import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, callRefOf, createSpec, queryFeedback } from '../harness/feedback.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, claim, createQueue, createSomeCalls, progress, projectQuery, queryItems, queueWithItems, stats, type Item } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Contract 5.11 through the API: a queue's access, assignees and overlap coverage; items'
// annotations_required and assigned_user_id; per-item assignment and the claim order; who may
// claim, post progress and annotate in an assigned queue; by_assignee; annotationQueues.mine.

/** The coverage point of an item id as the contract's overlap defines it here (README): the first 52 bits of SHA-256 over 2^52. */
const pointOf = (id: string) => parseInt(createHash('sha256').update(id).digest('hex').slice(0, 13), 16) / 2 ** 52;
const requiredOf = (id: string, coverage: number, perItem: number) => (pointOf(id) < coverage ? perItem : 1);
const sorted = (ids: string[]) => [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

type Queue = { id: string; access: string; assignees: string[]; overlap_coverage: number; annotations_per_item: number };

describeEachBackend('assignment and overlap (5.11)', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  let alice: CreatedKeyForTest;
  let bob: CreatedKeyForTest;
  let ann: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;
  const projectId = 'acme/assign';

  beforeAll(async () => {
    server = await startTestServer(backend);
    owner = await createUser(server, { entity: 'acme', role: 'admin' });
    alice = await createUser(server, { entity: 'acme', role: 'member' });
    bob = await createUser(server, { entity: 'acme', role: 'member' });
    ann = await createUser(server, { entity: 'acme', role: 'annotator' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    outsider = await createUser(server, { entity: 'elsewhere', role: 'admin' });
  });
  afterAll(() => server?.stop());

  const readQueue = async (queueId: string): Promise<Queue> => {
    const reply = await rest(server, 'GET', `/annotation_queues/${queueId}${projectQuery(projectId)}`, { key: owner.api_key });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.queue;
  };
  const putQueue = (queueId: string, fields: Record<string, unknown>) =>
    rest(server, 'PUT', `/annotation_queues/${queueId}`, { key: owner.api_key, body: { project_id: projectId, ...fields } });
  const assign = (queueId: string, itemIds: string[], userId: string | null, key = owner.api_key) =>
    rest(server, 'POST', `/annotation_queues/${queueId}/items/assign`, { key, body: { project_id: projectId, item_ids: itemIds, user_id: userId } });
  const claimed = async (user: CreatedKeyForTest, queueId: string): Promise<Item | null> => {
    const reply = await claim(server, user.api_key, projectId, queueId);
    expect(reply.status, reply.text).toBe(200);
    return reply.body.item;
  };
  const finish = async (user: CreatedKeyForTest, queueId: string, itemId: string, state = 'completed') => {
    const reply = await progress(server, user.api_key, projectId, queueId, itemId, state);
    expect(reply.status, reply.text).toBe(200);
  };

  it('a queue has access, assignees and overlap_coverage, with defaults, on create and PUT, through both doors', async () => {
    const plain = await readQueue(await createQueue(server, owner.api_key, projectId));
    expect(plain).toMatchObject({ access: 'open', assignees: [], overlap_coverage: 1, annotations_per_item: 1 });

    const queueId = await createQueue(server, owner.api_key, projectId, { access: 'assigned', assignees: [bob.user_id, alice.user_id, bob.user_id], overlap_coverage: 0.25 });
    expect(await readQueue(queueId)).toMatchObject({ access: 'assigned', assignees: sorted([alice.user_id, bob.user_id]), overlap_coverage: 0.25 });

    const put = await putQueue(queueId, { access: 'open', assignees: [ann.user_id, owner.user_id], overlap_coverage: 1 });
    expect(put.status, put.text).toBe(200);
    expect(put.body.queue).toMatchObject({ access: 'open', assignees: sorted([ann.user_id, owner.user_id]), overlap_coverage: 1 });
    // A PUT that leaves them out keeps them.
    expect((await putQueue(queueId, { name: 'renamed' })).body.queue).toMatchObject({ name: 'renamed', assignees: sorted([ann.user_id, owner.user_id]) });
    const typed = await client(server, owner.api_key).annotationQueues.update.mutate({ project_id: projectId, queue_id: queueId, assignees: [], access: 'assigned' });
    expect(typed).toEqual({ queue: await readQueue(queueId) });
    expect(typed.queue).toMatchObject({ access: 'assigned', assignees: [] });
  });

  it('refuses viewers, members of other entities and unknown users as assignees (400 naming the user), and a coverage outside (0, 1]', async () => {
    const asViewer = await rest(server, 'POST', '/annotation_queues', {
      key: owner.api_key,
      body: { project_id: projectId, name: 'with a viewer', assignees: [alice.user_id, viewer.user_id] },
    });
    expect(asViewer.status).toBe(400);
    expect(asViewer.body.reason).toBe(`assignees[1]: user "${viewer.user_id}" is a viewer of entity "acme"; only admins, members and annotators work queues.`);

    const queueId = await createQueue(server, owner.api_key, projectId, { assignees: [alice.user_id] });
    for (const stranger of [outsider.user_id, 'no-such-user']) {
      const reply = await putQueue(queueId, { assignees: [ann.user_id, stranger] });
      expect(reply.status).toBe(400);
      expect(reply.body.reason).toBe(`assignees[1]: user "${stranger}" is not a member of entity "acme".`);
    }
    expect((await readQueue(queueId)).assignees).toEqual([alice.user_id]);

    for (const overlap_coverage of [0, -0.1, 1.01, '0.5']) {
      const reply = await putQueue(queueId, { overlap_coverage });
      expect(reply.status, JSON.stringify(overlap_coverage)).toBe(400);
    }
    for (const access of ['closed', null]) expect((await putQueue(queueId, { access })).status).toBe(400);
    expect((await readQueue(queueId)).overlap_coverage).toBe(1);

    const { items } = await queueWithItems(server, owner.api_key, projectId, 1);
    const byViewer = await assign(items[0]!.queue_id, [items[0]!.id], viewer.user_id);
    expect(byViewer.status).toBe(400);
    expect(byViewer.body.reason).toBe(`user_id: user "${viewer.user_id}" is a viewer of entity "acme"; only admins, members and annotators work queues.`);
  });

  it('items carry annotations_required, from a stable hash of their id, and assigned_user_id; a new coverage re-divides them', async () => {
    const { queueId, items } = await queueWithItems(server, owner.api_key, projectId, 300, { annotations_per_item: 3, overlap_coverage: 0.3 });
    for (const item of items) {
      expect(item.annotations_required, item.id).toBe(requiredOf(item.id, 0.3, 3));
      expect(item.assigned_user_id).toBeNull();
    }
    const covered = items.filter((item) => item.annotations_required === 3).map((item) => item.id);
    expect(covered.length).toBeGreaterThan(0);
    expect(covered.length).toBeLessThan(300);

    // The counts route says the same quota.
    const counts = await rest(server, 'POST', `/annotation_queues/${queueId}/items/annotations`, { key: viewer.api_key, body: { project_id: projectId, item_ids: items.slice(0, 50).map((i) => i.id) } });
    expect(counts.status).toBe(200);
    expect(counts.body.items.map((c: { annotations_required: number }) => c.annotations_required)).toEqual(items.slice(0, 50).map((i) => i.annotations_required));

    expect((await putQueue(queueId, { overlap_coverage: 0.6 })).status).toBe(200);
    const again = await queryItems(server, owner.api_key, projectId, queueId, { limit: 300 });
    for (const item of again) expect(item.annotations_required, item.id).toBe(requiredOf(item.id, 0.6, 3));
    // Covered at 0.3 stays covered at 0.6: the point of an item does not change.
    const coveredNow = new Set(again.filter((item) => item.annotations_required === 3).map((item) => item.id));
    for (const id of covered) expect(coveredNow.has(id)).toBe(true);
    // annotations_per_item changes the covered items' quota only.
    expect((await putQueue(queueId, { annotations_per_item: 2 })).status).toBe(200);
    for (const item of await queryItems(server, owner.api_key, projectId, queueId, { limit: 300 })) expect(item.annotations_required).toBe(requiredOf(item.id, 0.6, 2));
  });

  it('over 10,000 items the covered share is within three standard errors of overlap_coverage', async () => {
    const count = 10_000;
    const coverage = 0.2;
    const callIds = await createSomeCalls(server, owner.api_key, projectId, count);
    const queueId = await createQueue(server, owner.api_key, projectId, { annotations_per_item: 3, overlap_coverage: coverage });
    expect((await addItems(server, owner.api_key, projectId, queueId, callIds)).added_count).toBe(count);
    const items = await queryItems(server, owner.api_key, projectId, queueId, { limit: count });
    expect(items).toHaveLength(count);
    const covered = items.filter((item) => item.annotations_required === 3).length;
    const standardError = Math.sqrt((coverage * (1 - coverage)) / count);
    expect(Math.abs(covered / count - coverage), `${covered} of ${count} covered`).toBeLessThan(3 * standardError);
    for (const item of items) expect(item.annotations_required).toBe(requiredOf(item.id, coverage, 3));
  });

  it('an assigned queue: only assignees claim, post progress and give svc.annotation feedback naming it (403); other feedback passes', async () => {
    const spec = await createSpec(server, owner.api_key, projectId, 'ok', { type: 'boolean' });
    const { queueId, items } = await queueWithItems(server, owner.api_key, projectId, 3, { access: 'assigned', assignees: [alice.user_id], scorer_refs: [spec.ref] });
    const annotation = (callId: string) => ({
      project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: 'svc.annotation.ok', annotation_ref: spec.ref, queue_id: queueId, payload: { value: true },
    });
    const refused = `Annotation queue "${queueId}" is assigned, and you are not one of its assignees.`;
    for (const stranger of [bob, owner]) {
      const claimReply = await claim(server, stranger.api_key, projectId, queueId);
      expect(claimReply.status).toBe(403);
      expect(claimReply.body.reason).toBe(refused);
      const progressReply = await progress(server, stranger.api_key, projectId, queueId, items[0]!.id, 'completed');
      expect(progressReply.status).toBe(403);
      expect(progressReply.body.reason).toBe(refused);
      const batch = await batchCreate(server, stranger.api_key, [annotation(items[0]!.call_id)]);
      expect(batch.status).toBe(403);
      expect(batch.body.reason).toBe(`batch[0].queue_id: ${refused}`);
      const single = await rest(server, 'POST', '/feedback/create', { key: stranger.api_key, body: annotation(items[1]!.call_id) });
      expect(single.status).toBe(403);
      expect(single.body.reason).toBe(`queue_id: ${refused}`);
    }
    // Other kinds of feedback may name the queue; nothing refused was stored.
    const reaction = { project_id: projectId, svc_ref: callRefOf(projectId, items[0]!.call_id), feedback_type: 'svc.reaction.1', queue_id: queueId, payload: { emoji: '👍' } };
    expect((await batchCreate(server, bob.api_key, [reaction])).status).toBe(200);
    expect((await queryFeedback(server, owner.api_key, projectId, { filter: { queue_id: queueId } })).map((f) => f.feedback_type)).toEqual(['svc.reaction.1']);
    expect((await stats(server, owner.api_key, projectId, queueId)).by_annotator).toEqual([]);

    const item = await claimed(alice, queueId);
    expect(item).toMatchObject({ id: items[0]!.id, annotation_state: 'in_progress', annotator_user_id: alice.user_id, annotations_required: 1, assigned_user_id: null });
    expect((await batchCreate(server, alice.api_key, [annotation(items[0]!.call_id)])).status).toBe(200);
    await finish(alice, queueId, items[0]!.id);
    // Through the typed door too.
    await expect(client(server, bob.api_key).annotationQueues.items.claim.mutate({ project_id: projectId, queue_id: queueId })).rejects.toMatchObject({
      data: { httpStatus: 403 },
    });
  });

  it('per-item assignment: {assigned_count, missing_item_ids}; the claim order is own in-progress, then assigned to the caller, then the rest; never another\'s item', async () => {
    const { queueId, items } = await queueWithItems(server, owner.api_key, projectId, 6);
    const [i0, i1, i2, i3, i4, i5] = items.map((item) => item.id) as [string, string, string, string, string, string];
    const deleted = await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/${i5}${projectQuery(projectId)}`, { key: owner.api_key });
    expect(deleted.status).toBe(200);

    const toBob = await assign(queueId, [i3, i3, 'no-such-item', i5], bob.user_id);
    expect(toBob.status, toBob.text).toBe(200);
    expect(toBob.body).toEqual({ assigned_count: 1, missing_item_ids: ['no-such-item', i5] });
    expect((await client(server, owner.api_key).annotationQueues.items.assign.mutate({ project_id: projectId, queue_id: queueId, item_ids: [i1], user_id: alice.user_id }))).toEqual({
      assigned_count: 1,
      missing_item_ids: [],
    });
    const shown = new Map((await queryItems(server, owner.api_key, projectId, queueId)).map((item) => [item.id, item.assigned_user_id]));
    expect([...shown.values()]).toEqual([null, alice.user_id, null, bob.user_id, null]);

    // Alice: her assigned item first, again while it is hers, then the rest in queue order; never Bob's.
    expect((await claimed(alice, queueId))?.id).toBe(i1);
    expect((await claimed(alice, queueId))?.id).toBe(i1);
    await finish(alice, queueId, i1);
    const order: string[] = [];
    for (let item = await claimed(alice, queueId); item; item = await claimed(alice, queueId)) {
      order.push(item.id);
      await finish(alice, queueId, item.id, 'skipped');
    }
    expect(order).toEqual([i0, i2, i4]);
    expect((await claimed(bob, queueId))?.id).toBe(i3);

    // Unassigned, an item is anyone's again; only members and admins assign (a viewer or an annotator: 403).
    const { queueId: other, items: more } = await queueWithItems(server, owner.api_key, projectId, 2);
    expect((await assign(other, [more[0]!.id, more[1]!.id], bob.user_id)).body.assigned_count).toBe(2);
    expect(await claimed(alice, other)).toBeNull();
    expect((await assign(other, [more[1]!.id], null)).body).toEqual({ assigned_count: 1, missing_item_ids: [] });
    expect((await claimed(alice, other))?.id).toBe(more[1]!.id);
    for (const key of [viewer.api_key, ann.api_key]) expect((await assign(other, [more[0]!.id], null, key)).status).toBe(403);
    expect((await assign('no-such-queue', [more[0]!.id], null)).status).toBe(404);

    // In an assigned queue, items go to its assignees only.
    const { queueId: closed, items: closedItems } = await queueWithItems(server, owner.api_key, projectId, 1, { access: 'assigned', assignees: [alice.user_id] });
    const notAssignee = await assign(closed, [closedItems[0]!.id], bob.user_id);
    expect(notAssignee.status).toBe(400);
    expect(notAssignee.body.reason).toBe(`user_id: user "${bob.user_id}" is not an assignee of annotation queue "${closed}", which is assigned.`);
  });

  it('stats: done_items against each item\'s quota, by_assignee, and only the assignees\' work', async () => {
    const { queueId, items } = await queueWithItems(server, owner.api_key, projectId, 4, { access: 'assigned', assignees: [alice.user_id, bob.user_id], annotations_per_item: 2 });
    const [i0, i1, i2, i3] = items.map((item) => item.id) as [string, string, string, string];
    expect((await assign(queueId, [i3], bob.user_id)).status).toBe(200);
    expect((await claimed(alice, queueId))?.id).toBe(i0);
    await finish(alice, queueId, i0);
    expect((await claimed(bob, queueId))?.id).toBe(i3);
    await finish(bob, queueId, i3);
    expect((await claimed(bob, queueId))?.id).toBe(i0);
    await finish(bob, queueId, i0);
    expect((await claimed(alice, queueId))?.id).toBe(i1);

    const before = await stats(server, owner.api_key, projectId, queueId);
    expect(before).toMatchObject({ total_items: 4, completed_items: 2, done_items: 1 });
    expect(before.by_assignee).toEqual(
      [
        { user_id: alice.user_id, assigned_items: 0, done: 1, in_progress: 1, remaining: 2 }, // i1 (hers in progress) and i2
        { user_id: bob.user_id, assigned_items: 1, done: 2, in_progress: 0, remaining: 2 }, // i1 and i2; i3 is finished by him
      ].sort((a, b) => (a.user_id < b.user_id ? -1 : 1)),
    );
    const annotations = async () =>
      (await rest(server, 'POST', `/annotation_queues/${queueId}/items/annotations`, { key: owner.api_key, body: { project_id: projectId, item_ids: [i0, i3] } })).body.items;
    expect(await annotations()).toEqual([
      { item_id: i0, annotations_done: 2, annotations_required: 2 },
      { item_id: i3, annotations_done: 1, annotations_required: 2 },
    ]);

    // Alice is removed: her lease on i1 ends and her items go back to everyone, her finished work
    // stays but stops counting, and Bob claims what she held.
    expect((await assign(queueId, [i2], alice.user_id)).status).toBe(200);
    const put = await putQueue(queueId, { assignees: [bob.user_id] });
    expect(put.status, put.text).toBe(200);
    expect((await claim(server, alice.api_key, projectId, queueId)).status).toBe(403);
    const after = await stats(server, owner.api_key, projectId, queueId);
    expect(after).toMatchObject({ completed_items: 2, done_items: 0 });
    expect(after.by_annotator.map((a) => a.annotator_user_id)).toEqual([bob.user_id]);
    expect(after.by_assignee.map((a) => a.user_id)).toEqual([bob.user_id]);
    expect(await annotations()).toEqual([
      { item_id: i0, annotations_done: 1, annotations_required: 2 },
      { item_id: i3, annotations_done: 1, annotations_required: 2 },
    ]);
    const shown = new Map((await queryItems(server, owner.api_key, projectId, queueId)).map((item) => [item.id, item]));
    expect(shown.get(i1)).toMatchObject({ annotation_state: 'unstarted', annotator_user_id: null });
    expect(shown.get(i0)).toMatchObject({ annotation_state: 'completed', annotator_user_id: bob.user_id });
    expect(shown.get(i2)!.assigned_user_id).toBeNull();
    expect((await claimed(bob, queueId))?.id).toBe(i1);

    // Back as an assignee, her finished work counts again.
    expect((await putQueue(queueId, { assignees: [alice.user_id, bob.user_id] })).status).toBe(200);
    expect((await stats(server, owner.api_key, projectId, queueId)).done_items).toBe(1);
    expect((await queryItems(server, owner.api_key, projectId, queueId)).find((item) => item.id === i0)).toMatchObject({ annotation_state: 'completed' });
    // An open queue counts everyone's work; by_assignee names those who still have items assigned.
    expect((await putQueue(queueId, { access: 'open', assignees: [] })).status).toBe(200);
    const open = await stats(server, owner.api_key, projectId, queueId);
    expect(open.done_items).toBe(1);
    expect(open.by_assignee).toEqual([{ user_id: bob.user_id, assigned_items: 1, done: 2, in_progress: 1, remaining: 2 }]);
    expect(open.by_annotator.map((a) => a.annotator_user_id)).toEqual(sorted([alice.user_id, bob.user_id]));
  });

  it('annotationQueues.mine lists the queues the caller may claim from, with remaining_for_me and done_by_me', async () => {
    const entity = 'mine';
    const lead = await createUser(server, { entity, role: 'admin' });
    const worker = await createUser(server, { entity, role: 'annotator' });
    const other = await createUser(server, { entity, role: 'member' });
    const looker = await createUser(server, { entity, role: 'viewer' });
    const first = `${entity}/one`;
    const second = `${entity}/two`;
    const open = await queueWithItems(server, lead.api_key, first, 3);
    const mineToo = await queueWithItems(server, lead.api_key, second, 2, { access: 'assigned', assignees: [worker.user_id, other.user_id] });
    const notMine = await queueWithItems(server, lead.api_key, second, 2, { access: 'assigned', assignees: [other.user_id] });
    const newer = await queueWithItems(server, lead.api_key, first, 1, { annotations_per_item: 2 });

    const mine = async (user: CreatedKeyForTest, body: Record<string, unknown> = {}) => {
      const reply = await rest(server, 'POST', '/annotation_queues/mine', { key: user.api_key, body });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.queues as { project_id: string; queue: Queue; remaining_for_me: number; done_by_me: number }[];
    };
    const summary = (queues: Awaited<ReturnType<typeof mine>>) => queues.map((q) => [q.project_id, q.queue.id, q.remaining_for_me, q.done_by_me]);
    expect(summary(await mine(worker))).toEqual([
      [first, newer.queueId, 1, 0],
      [first, open.queueId, 3, 0],
      [second, mineToo.queueId, 2, 0],
    ]);

    // Work done by the worker and by others.
    const item = (await claim(server, worker.api_key, first, open.queueId)).body.item as Item;
    expect((await progress(server, worker.api_key, first, open.queueId, item.id, 'completed')).status).toBe(200);
    const taken = (await claim(server, other.api_key, first, open.queueId)).body.item as Item;
    expect((await progress(server, other.api_key, first, open.queueId, taken.id, 'completed')).status).toBe(200);
    expect((await claim(server, other.api_key, first, newer.queueId)).status).toBe(200);
    expect((await claim(server, worker.api_key, second, mineToo.queueId)).status).toBe(200);
    expect(summary(await mine(worker))).toEqual([
      [first, newer.queueId, 1, 0],
      [first, open.queueId, 1, 1],
      [second, mineToo.queueId, 2, 0],
    ]);
    expect(summary(await mine(worker, { project_id: second }))).toEqual([[second, mineToo.queueId, 2, 0]]);
    expect(summary(await mine(other, { project_id: second }))).toEqual([
      [second, notMine.queueId, 2, 0],
      [second, mineToo.queueId, 2, 0],
    ]);
    // A viewer claims nothing; another entity's project is refused.
    expect(await mine(looker)).toEqual([]);
    const foreign = await rest(server, 'POST', '/annotation_queues/mine', { key: worker.api_key, body: { project_id: projectId } });
    expect(foreign.status).toBe(403);
    expect(foreign.body.reason).toBe('You are not a member of entity "acme".');
    expect((await rest(server, 'POST', '/annotation_queues/mine', { key: worker.api_key, body: { project_id: 'bad id' } })).status).toBe(400);
    // The typed door answers the same.
    expect(await client(server, worker.api_key).annotationQueues.mine.query({})).toEqual({ queues: await mine(worker) });
  });

  // Two writes that lock the same rows in other orders deadlock on PostgreSQL (40P01, a 503).
  it('assigns under concurrent assigns of the same 1,000 items in opposite orders', async () => {
    const projectId = 'acme/assign-race';
    const callIds = await createSomeCalls(server, owner.api_key, projectId, 1000);
    const queueId = await createQueue(server, owner.api_key, projectId);
    await addItems(server, owner.api_key, projectId, queueId, callIds);
    const itemIds = (await queryItems(server, owner.api_key, projectId, queueId, { limit: 1000 })).map((item) => item.id);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, n) =>
      rest(server, 'POST', `/annotation_queues/${queueId}/items/assign`, {
        key: owner.api_key,
        body: { project_id: projectId, item_ids: n % 2 ? [...itemIds].reverse() : itemIds, user_id: n % 4 < 2 ? alice.user_id : null },
      })));
    expect(replies.map((r) => r.status), replies.find((r) => r.status !== 200)?.text).toEqual(Array(8).fill(200));
    for (const reply of replies) expect(reply.body.assigned_count).toBe(1000);
  });
});
