import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import {
  addItems,
  claim,
  createCalls,
  createQueue,
  createSomeCalls,
  progress,
  projectQuery,
  queryItems,
  queueWithItems,
  stats,
  TIMESTAMP,
  uniqueId,
  UUID_V7,
  type Item,
} from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

type SortKey = { field: 'created_at' | 'updated_at' | 'call_started_at' | 'call_op_name'; direction: 'asc' | 'desc' };

/** The contract's order, computed here independently: the sort keys, then `id` ascending. */
function sortedItems(items: readonly Item[], keys: readonly SortKey[]): Item[] {
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0); // bytewise for ASCII
  return [...items].sort((x, y) => {
    for (const { field, direction } of keys) {
      const c = compare(x[field] as string, y[field] as string);
      if (c !== 0) return direction === 'asc' ? c : -c;
    }
    return compare(x.id, y.id);
  });
}

const ids = (items: readonly { id: string }[]) => items.map((item) => item.id);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeEachBackend('annotation queues', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let other: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    other = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  const readQueue = (projectId: string, queueId: string, key = member.api_key) =>
    rest(server, 'GET', `/annotation_queues/${queueId}${projectQuery(projectId)}`, { key });
  const listQueues = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/annotation_queues/query', { key, body });
  const createSpec = async (projectId: string, name: string) => {
    const reply = await rest(server, 'POST', '/annotation_specs', {
      key: member.api_key,
      body: { project_id: projectId, name, field_schema: { type: 'integer', minimum: 1, maximum: 5 } },
    });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.ref as string;
  };

  describe('queues', () => {
    it('creates a queue with defaults and reads it back', async () => {
      const projectId = 'acme/create';
      const created = await rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: 'Triage' } });
      expect(created.status, created.text).toBe(200);
      expect(Object.keys(created.body)).toEqual(['id']);
      expect(created.body.id).toMatch(UUID_V7);
      const read = await readQueue(projectId, created.body.id);
      expect(read.status, read.text).toBe(200);
      expect(read.body).toEqual({
        queue: {
          id: created.body.id,
          project_id: projectId,
          name: 'Triage',
          description: null,
          scorer_refs: [],
          annotations_per_item: 1,
          lease_seconds: 900,
          access: 'open',
          assignees: [],
          overlap_coverage: 1,
          created_at: expect.stringMatching(TIMESTAMP),
          created_by: member.user_id,
          updated_at: read.body.queue.created_at,
          deleted_at: null,
        },
      });
      // A viewer reads; a viewer does not create.
      expect((await readQueue(projectId, created.body.id, viewer.api_key)).status).toBe(200);
      const byViewer = await rest(server, 'POST', '/annotation_queues', { key: viewer.api_key, body: { project_id: projectId, name: 'x' } });
      expect(byViewer.status).toBe(403);
      // Another project, or an unknown id, is a 404.
      expect((await readQueue('acme/create-other', created.body.id)).status).toBe(404);
      expect((await readQueue(projectId, 'no-such-queue')).status).toBe(404);
    });

    it('stores every field given, scorer refs included, and requires them to resolve to specs of the project', async () => {
      const projectId = 'acme/scorers';
      const ref = await createSpec(projectId, 'helpfulness');
      const foreign = await createSpec('acme/scorers-other', 'helpfulness');
      const id = await createQueue(server, member.api_key, projectId, {
        name: 'Full',
        description: 'everything set',
        scorer_refs: [ref],
        annotations_per_item: 3,
        lease_seconds: 60,
      });
      expect((await readQueue(projectId, id)).body.queue).toMatchObject({
        name: 'Full',
        description: 'everything set',
        scorer_refs: [ref],
        annotations_per_item: 3,
        lease_seconds: 60,
      });
      const digest = ref.split(':').pop();
      const bad = [
        `svc:///${projectId}/object/helpfulness:not${digest}`, // well-formed, names no stored spec
        `svc:///${projectId}/object/unknown:${digest}`,
        foreign, // a spec of another project
        `svc:///${projectId}/object/helpfulness`, // malformed: no digest
        'helpfulness',
        `svc:///${projectId}/call/some-call`,
      ];
      const before = (await listQueues({ project_id: projectId })).body.queues.length;
      for (const scorer of bad) {
        const reply = await rest(server, 'POST', '/annotation_queues', {
          key: member.api_key,
          body: { project_id: projectId, name: 'Bad', scorer_refs: [ref, scorer] },
        });
        expect(reply.status, scorer).toBe(400);
        expect(reply.body.code).toBe('BAD_REQUEST');
        expect(reply.body.reason, scorer).toContain('scorer_refs[1]');
      }
      expect((await listQueues({ project_id: projectId })).body.queues).toHaveLength(before);
    });

    it('bounds annotations_per_item to 1-100 and lease_seconds to 10-86400', async () => {
      const projectId = 'acme/bounds';
      for (const fields of [
        { annotations_per_item: 0 },
        { annotations_per_item: 101 },
        { annotations_per_item: -1 },
        { annotations_per_item: 1.5 },
        { lease_seconds: 9 },
        { lease_seconds: 86_401 },
        { name: '' },
        { name: '   ' },
      ]) {
        const reply = await rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: 'q', ...fields } });
        expect(reply.status, JSON.stringify(fields)).toBe(400);
        expect(reply.body.reason).toContain(Object.keys(fields)[0]);
      }
      expect((await listQueues({ project_id: projectId })).body.queues).toEqual([]);
      for (const fields of [{ annotations_per_item: 1 }, { annotations_per_item: 100 }, { lease_seconds: 10 }, { lease_seconds: 86_400 }]) {
        const id = await createQueue(server, member.api_key, projectId, fields);
        expect((await readQueue(projectId, id)).body.queue).toMatchObject(fields);
      }
    });

    it('lists queues newest first, by case-insensitive substring with % and _ taken literally, with limit and offset', async () => {
      const projectId = 'acme/list';
      const names = ['Alpha Review', 'alpha_beta', 'Gamma 100% done', 'alphaXbeta', 'BETA', 'wow!', 'Alpha%'];
      const created: Record<string, string> = {};
      for (const name of names) {
        created[name] = await createQueue(server, member.api_key, projectId, { name });
        await sleep(3);
      }
      // A queue of another project never shows.
      await createQueue(server, member.api_key, 'acme/list-other', { name: 'Alpha elsewhere' });
      const namesOf = async (body: Record<string, unknown>) => {
        const reply = await listQueues({ project_id: projectId, ...body });
        expect(reply.status, reply.text).toBe(200);
        return reply.body.queues.map((q: { name: string }) => q.name);
      };
      const newestFirst = [...names].reverse();
      expect(await namesOf({})).toEqual(newestFirst);
      expect(await namesOf({ name: 'ALPHA' })).toEqual(['Alpha%', 'alphaXbeta', 'alpha_beta', 'Alpha Review']);
      expect(await namesOf({ name: 'beta' })).toEqual(['BETA', 'alphaXbeta', 'alpha_beta']);
      expect(await namesOf({ name: '_' })).toEqual(['alpha_beta']);
      expect(await namesOf({ name: 'a_b' })).toEqual(['alpha_beta']);
      expect(await namesOf({ name: '%' })).toEqual(['Alpha%', 'Gamma 100% done']);
      expect(await namesOf({ name: 'a%' })).toEqual(['Alpha%']);
      expect(await namesOf({ name: '0% d' })).toEqual(['Gamma 100% done']);
      expect(await namesOf({ name: '!' })).toEqual(['wow!']);
      expect(await namesOf({ name: 'nothing like it' })).toEqual([]);
      expect(await namesOf({ limit: 2 })).toEqual(newestFirst.slice(0, 2));
      expect(await namesOf({ limit: 3, offset: 2 })).toEqual(newestFirst.slice(2, 5));
      expect(await namesOf({ name: 'alpha', limit: 1, offset: 1 })).toEqual(['alphaXbeta']);

      // Deleted queues are not listed.
      expect((await rest(server, 'DELETE', `/annotation_queues/${created['alphaXbeta']}${projectQuery(projectId)}`, { key: member.api_key })).status).toBe(200);
      expect(await namesOf({ name: 'alpha' })).toEqual(['Alpha%', 'alpha_beta', 'Alpha Review']);
      expect(await namesOf({})).toEqual(newestFirst.filter((n) => n !== 'alphaXbeta'));
      // A viewer lists; an outsider does not.
      expect((await listQueues({ project_id: projectId }, viewer.api_key)).status).toBe(200);
      const outsider = await createUser(server, { entity: 'elsewhere' });
      expect((await listQueues({ project_id: projectId }, outsider.api_key)).status).toBe(403);
    });

    it('updates only the fields given, moves updated_at, and validates like create', async () => {
      const projectId = 'acme/update';
      const ref = await createSpec(projectId, 'score');
      const id = await createQueue(server, member.api_key, projectId, { name: 'Before', description: 'kept', annotations_per_item: 2 });
      const before = (await readQueue(projectId, id)).body.queue;
      await sleep(10);
      const put = (body: Record<string, unknown>, key = member.api_key) =>
        rest(server, 'PUT', `/annotation_queues/${id}`, { key, body: { project_id: projectId, ...body } });

      const renamed = await put({ name: 'After' });
      expect(renamed.status, renamed.text).toBe(200);
      expect(renamed.body.queue).toEqual({ ...before, name: 'After', updated_at: expect.stringMatching(TIMESTAMP) });
      expect(renamed.body.queue.updated_at > before.updated_at).toBe(true);
      expect((await readQueue(projectId, id)).body.queue).toEqual(renamed.body.queue);

      await sleep(10);
      const more = await put({ description: null, scorer_refs: [ref], lease_seconds: 30 });
      expect(more.status, more.text).toBe(200);
      expect(more.body.queue).toEqual({
        ...renamed.body.queue,
        description: null,
        scorer_refs: [ref],
        lease_seconds: 30,
        updated_at: expect.stringMatching(TIMESTAMP),
      });
      expect(more.body.queue.updated_at > renamed.body.queue.updated_at).toBe(true);
      expect(more.body.queue.created_at).toBe(before.created_at);

      const stored = (await readQueue(projectId, id)).body.queue;
      for (const bad of [
        { annotations_per_item: 0 },
        { annotations_per_item: 101 },
        { lease_seconds: 5 },
        { scorer_refs: [`svc:///${projectId}/object/score:unknown`] },
        { scorer_refs: ['svc:///broken'] },
        { colour: 'red' },
      ]) {
        const reply = await put(bad);
        expect(reply.status, JSON.stringify(bad)).toBe(400);
      }
      expect((await put({ name: 'By viewer' }, viewer.api_key)).status).toBe(403);
      expect((await readQueue(projectId, id)).body.queue).toEqual(stored);
      expect((await rest(server, 'PUT', '/annotation_queues/no-such-queue', { key: member.api_key, body: { project_id: projectId, name: 'x' } })).status).toBe(404);
    });

    it('soft-deletes a queue: it and its items then answer 404 everywhere', async () => {
      const projectId = 'acme/delete';
      const { queueId, items } = await queueWithItems(server, member.api_key, projectId, 2);
      const item = items[0]!;
      const removed = await rest(server, 'DELETE', `/annotation_queues/${queueId}${projectQuery(projectId)}`, { key: viewer.api_key });
      expect(removed.status).toBe(403);
      const deleted = await rest(server, 'DELETE', `/annotation_queues/${queueId}${projectQuery(projectId)}`, { key: member.api_key });
      expect(deleted.status, deleted.text).toBe(200);
      expect(deleted.body.queue).toMatchObject({ id: queueId, deleted_at: expect.stringMatching(TIMESTAMP) });

      const q = `/annotation_queues/${queueId}`;
      const body = { project_id: projectId };
      const replies = {
        read: await readQueue(projectId, queueId),
        update: await rest(server, 'PUT', q, { key: member.api_key, body: { ...body, name: 'x' } }),
        deleteAgain: await rest(server, 'DELETE', `${q}${projectQuery(projectId)}`, { key: member.api_key }),
        itemsQuery: await rest(server, 'POST', `${q}/items/query`, { key: member.api_key, body }),
        itemsAdd: await rest(server, 'POST', `${q}/items`, { key: member.api_key, body: { ...body, call_ids: [item.call_id] } }),
        progress: await progress(server, member.api_key, projectId, queueId, item.id, 'completed'),
        claim: await claim(server, member.api_key, projectId, queueId),
        stats: await rest(server, 'POST', '/annotation_queues/stats', { key: member.api_key, body: { ...body, queue_ids: [queueId] } }),
        itemDelete: await rest(server, 'DELETE', `${q}/items/${item.id}${projectQuery(projectId)}`, { key: member.api_key }),
      };
      for (const [what, reply] of Object.entries(replies)) {
        expect(reply.status, `${what}: ${reply.text}`).toBe(404);
        expect(reply.body.code).toBe('NOT_FOUND');
      }
      expect((await listQueues(body)).body.queues).toEqual([]);
    });
  });

  describe('adding items', () => {
    it('reports added_count, duplicates and missing_call_ids, and copies the call fields', async () => {
      const projectId = 'acme/add';
      const [c1, c2, c3, c4] = await createCalls(server, member.api_key, projectId, [
        { id: uniqueId('a'), op_name: 'chat', trace_id: 'trace-1', started_at: '2026-05-01T10:00:00.000Z', ended_at: '2026-05-01T10:00:02.500Z' },
        { id: uniqueId('a'), op_name: 'rank', trace_id: 'trace-2', started_at: '2026-05-01T11:00:00.000Z' },
        { id: uniqueId('a') },
        { id: uniqueId('a') },
      ]) as [string, string, string, string];
      const [foreign] = await createSomeCalls(server, member.api_key, 'acme/add-other', 1);
      const queueId = await createQueue(server, member.api_key, projectId);

      const first = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, {
        key: member.api_key,
        body: { project_id: projectId, call_ids: [c1, c2], display_fields: ['inputs.q', 'output'] },
      });
      expect(first.status, first.text).toBe(200);
      expect(first.body).toEqual({ added_count: 2, duplicates: [], missing_call_ids: [] });

      const second = await addItems(server, other.api_key, projectId, queueId, [c2, c3, 'no-such-call', c4, foreign!, c3]);
      expect(second.added_count).toBe(2);
      expect([...second.duplicates].sort()).toEqual([c2, c3].sort());
      expect([...second.missing_call_ids].sort()).toEqual(['no-such-call', foreign!].sort());

      const items = await queryItems(server, member.api_key, projectId, queueId);
      expect(items.map((i) => i.call_id).sort()).toEqual([c1, c2, c3, c4].sort());
      const first1 = items.find((i) => i.call_id === c1)!;
      expect(first1).toEqual({
        id: expect.stringMatching(UUID_V7),
        project_id: projectId,
        queue_id: queueId,
        call_id: c1,
        call_started_at: '2026-05-01T10:00:00.000Z',
        call_ended_at: '2026-05-01T10:00:02.500Z',
        call_op_name: 'chat',
        call_trace_id: 'trace-1',
        display_fields: ['inputs.q', 'output'],
        annotation_state: 'unstarted',
        annotator_user_id: null,
        added_by: member.user_id,
        created_at: expect.stringMatching(TIMESTAMP),
        created_by: member.user_id,
        updated_at: first1.created_at,
        deleted_at: null,
        position_in_queue: null,
        assigned_user_id: null,
        annotations_required: 1,
      });
      expect(items.find((i) => i.call_id === c3)).toMatchObject({ added_by: other.user_id, display_fields: [], call_ended_at: null });

      // Nothing valid to add: all duplicates or missing, nothing changes.
      expect(await addItems(server, member.api_key, projectId, queueId, [c1, 'ghost'])).toEqual({
        added_count: 0,
        duplicates: [c1],
        missing_call_ids: ['ghost'],
      });
      expect(await queryItems(server, member.api_key, projectId, queueId)).toHaveLength(4);

      // Bad requests: empty list, a viewer, an unknown queue.
      const empty = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, { key: member.api_key, body: { project_id: projectId, call_ids: [] } });
      expect(empty.status).toBe(400);
      expect((await rest(server, 'POST', `/annotation_queues/${queueId}/items`, { key: viewer.api_key, body: { project_id: projectId, call_ids: [c1] } })).status).toBe(403);
      expect((await rest(server, 'POST', '/annotation_queues/nope/items', { key: member.api_key, body: { project_id: projectId, call_ids: [c1] } })).status).toBe(404);
    });

    it('never adds one call twice under concurrent adds: 10 parallel requests of the same 1,000 calls', async () => {
      // 1,000 calls, two statements a request: long enough for opposite orders to meet mid-way
      // (with 50 they deadlocked on PostgreSQL only now and then).
      const projectId = 'acme/concurrent-add';
      const callIds = await createSomeCalls(server, member.api_key, projectId, 1000);
      const queueId = await createQueue(server, member.api_key, projectId);
      const replies = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          rest(server, 'POST', `/annotation_queues/${queueId}/items`, {
            key: member.api_key,
            // Each request lists the calls in another order, so that requests overlap mid-way.
            body: { project_id: projectId, call_ids: n % 2 ? [...callIds].reverse() : callIds },
          }),
        ),
      );
      for (const reply of replies) {
        expect(reply.status, reply.text).toBe(200);
        expect(reply.body.added_count + reply.body.duplicates.length).toBe(1000);
        expect(reply.body.missing_call_ids).toEqual([]);
      }
      expect(replies.reduce((sum, reply) => sum + reply.body.added_count, 0)).toBe(1000);
      const items = await queryItems(server, member.api_key, projectId, queueId, { limit: 1000 });
      expect(items).toHaveLength(1000);
      expect(new Set(items.map((i) => i.call_id))).toEqual(new Set(callIds));
      expect((await stats(server, member.api_key, projectId, queueId)).total_items).toBe(1000);
    });

    it("keeps the request's order of calls as the queue's order", async () => {
      const projectId = 'acme/add-order';
      const callIds = await createSomeCalls(server, member.api_key, projectId, 6);
      const shuffled = [callIds[3]!, callIds[0]!, callIds[5]!, callIds[1]!, callIds[4]!, callIds[2]!];
      const queueId = await createQueue(server, member.api_key, projectId);
      expect((await addItems(server, member.api_key, projectId, queueId, shuffled)).added_count).toBe(6);
      const items = await queryItems(server, member.api_key, projectId, queueId);
      expect(items.map((i) => i.call_id)).toEqual(shuffled);
    });
  });

  describe('querying items', () => {
    const projectId = 'acme/items';
    let queueId: string;
    let all: Item[];
    let byCall: Record<string, Item>;

    // Call ids sort opposite to the order in which they are added, so that a tie broken by call id
    // or by insertion order would differ from a tie broken by item id.
    const calls = [
      { id: 'z7', op_name: 'chat', trace_id: 'T1', started_at: '2026-04-01T00:00:05.000Z' },
      { id: 'z6', op_name: 'rank', trace_id: 'T1', started_at: '2026-04-01T00:00:01.000Z' },
      { id: 'z5', op_name: 'chat', trace_id: 'T2', started_at: '2026-04-01T00:00:03.000Z' },
      { id: 'z4', op_name: 'embed', trace_id: 'T2', started_at: '2026-04-01T00:00:03.000Z' },
      { id: 'z3', op_name: 'rank', trace_id: 'T3', started_at: '2026-04-01T00:00:02.000Z' },
      { id: 'z2', op_name: 'chat', trace_id: 'T3', started_at: '2026-04-01T00:00:01.000Z' },
      { id: 'z1', op_name: 'Chat', trace_id: 'T1', started_at: '2026-04-01T00:00:04.000Z' },
      { id: 'z0', op_name: 'embed', trace_id: 'T1', started_at: '2026-04-01T00:00:00.000Z' },
    ];

    beforeAll(async () => {
      await createCalls(server, member.api_key, projectId, calls);
      queueId = await createQueue(server, member.api_key, projectId);
      // Two requests: the items of one request share created_at (and updated_at).
      expect((await addItems(server, member.api_key, projectId, queueId, ['z7', 'z6', 'z5', 'z4', 'z3'])).added_count).toBe(5);
      await sleep(15);
      expect((await addItems(server, other.api_key, projectId, queueId, ['z2', 'z1', 'z0'])).added_count).toBe(3);
      all = await queryItems(server, member.api_key, projectId, queueId);
      byCall = Object.fromEntries(all.map((item) => [item.call_id, item]));
      const set = async (key: string, call: string, state: string) =>
        expect((await progress(server, key, projectId, queueId, byCall[call]!.id, state)).status).toBe(200);
      await set(member.api_key, 'z6', 'completed');
      await set(other.api_key, 'z5', 'in_progress');
      await set(member.api_key, 'z2', 'skipped');
      await set(member.api_key, 'z1', 'in_progress');
      await set(other.api_key, 'z1', 'completed');
      all = await queryItems(server, member.api_key, projectId, queueId);
      byCall = Object.fromEntries(all.map((item) => [item.call_id, item]));
    });

    const callIdsOf = (items: readonly Item[]) => items.map((item) => item.call_id);

    it('has the ties this suite depends on', () => {
      expect(all).toHaveLength(8);
      expect(new Set(all.map((i) => i.created_at)).size).toBe(2);
      expect(new Set(all.map((i) => i.updated_at)).size).toBe(2);
      expect(byCall.z5!.call_started_at).toBe(byCall.z4!.call_started_at);
      expect(byCall.z6!.call_started_at).toBe(byCall.z2!.call_started_at);
      // Within one request, item ids do not follow call ids.
      expect(byCall.z7!.id < byCall.z6!.id).toBe(true);
      expect(all.map((i) => i.annotation_state).sort()).toEqual(
        ['completed', 'completed', 'in_progress', 'skipped', 'unstarted', 'unstarted', 'unstarted', 'unstarted'],
      );
    });

    it('orders by created_at then id ascending by default', () => {
      expect(callIdsOf(all)).toEqual(['z7', 'z6', 'z5', 'z4', 'z3', 'z2', 'z1', 'z0']);
      expect(ids(all)).toEqual(ids(sortedItems(all, [{ field: 'created_at', direction: 'asc' }])));
    });

    it('filters by call_ids, call_op_names, call_trace_ids, added_by and annotation_states', async () => {
      const query = async (filter: Record<string, unknown>) => callIdsOf(await queryItems(server, member.api_key, projectId, queueId, { filter }));
      expect(await query({ call_ids: ['z5', 'z2', 'unknown'] })).toEqual(['z5', 'z2']);
      expect(await query({ call_op_names: ['chat'] })).toEqual(['z7', 'z5', 'z2']);
      expect(await query({ call_op_names: ['Chat', 'embed'] })).toEqual(['z4', 'z1', 'z0']);
      expect(await query({ call_trace_ids: ['T1'] })).toEqual(['z7', 'z6', 'z1', 'z0']);
      expect(await query({ added_by: [other.user_id] })).toEqual(['z2', 'z1', 'z0']);
      expect(await query({ added_by: [member.user_id] })).toEqual(['z7', 'z6', 'z5', 'z4', 'z3']);
      expect(await query({ annotation_states: ['unstarted'] })).toEqual(['z7', 'z4', 'z3', 'z0']);
      expect(await query({ annotation_states: ['completed', 'skipped'] })).toEqual(['z6', 'z2', 'z1']);
      expect(await query({ annotation_states: ['in_progress'] })).toEqual(['z5']);
      expect(await query({ call_op_names: ['chat'], annotation_states: ['unstarted'] })).toEqual(['z7']);
      expect(await query({ call_trace_ids: ['T1'], added_by: [other.user_id], call_ids: ['z0', 'z6'] })).toEqual(['z0']);
      expect(await query({ call_ids: [] })).toEqual([]);
      const bad = await rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, {
        key: member.api_key,
        body: { project_id: projectId, filter: { annotation_states: ['done'] } },
      });
      expect(bad.status).toBe(400);
    });

    it('sorts by every field in both directions, id ascending breaking ties', async () => {
      const fields = ['created_at', 'updated_at', 'call_started_at', 'call_op_name'] as const;
      const orders: SortKey[][] = [
        ...fields.flatMap((field) => (['asc', 'desc'] as const).map((direction) => [{ field, direction }])),
        [
          { field: 'call_op_name', direction: 'asc' },
          { field: 'call_started_at', direction: 'desc' },
        ],
        [
          { field: 'created_at', direction: 'desc' },
          { field: 'call_started_at', direction: 'asc' },
        ],
      ];
      for (const sort_by of orders) {
        const got = await queryItems(server, member.api_key, projectId, queueId, { sort_by });
        expect(ids(got), JSON.stringify(sort_by)).toEqual(ids(sortedItems(all, sort_by)));
      }
      // Spelled out for two of them, so that a wrong comparator above cannot hide a wrong order.
      const desc = await queryItems(server, member.api_key, projectId, queueId, { sort_by: [{ field: 'created_at', direction: 'desc' }] });
      expect(callIdsOf(desc)).toEqual(['z2', 'z1', 'z0', 'z7', 'z6', 'z5', 'z4', 'z3']);
      const byOp = await queryItems(server, member.api_key, projectId, queueId, { sort_by: [{ field: 'call_op_name', direction: 'desc' }] });
      expect(callIdsOf(byOp)).toEqual(['z6', 'z3', 'z4', 'z0', 'z7', 'z5', 'z2', 'z1']);
      const bad = await rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, {
        key: member.api_key,
        body: { project_id: projectId, sort_by: [{ field: 'call_id', direction: 'asc' }] },
      });
      expect(bad.status).toBe(400);
    });

    it('pages with limit and offset, and refuses a limit over 10000', async () => {
      const page = async (body: Record<string, unknown>) => callIdsOf(await queryItems(server, member.api_key, projectId, queueId, body));
      expect(await page({ limit: 3 })).toEqual(['z7', 'z6', 'z5']);
      expect(await page({ limit: 3, offset: 3 })).toEqual(['z4', 'z3', 'z2']);
      expect(await page({ offset: 6 })).toEqual(['z1', 'z0']);
      expect(await page({ offset: 8 })).toEqual([]);
      expect(await page({ limit: 10_000 })).toHaveLength(8);
      const sorted = callIdsOf(sortedItems(all, [{ field: 'call_started_at', direction: 'desc' }]));
      expect(await page({ sort_by: [{ field: 'call_started_at', direction: 'desc' }], limit: 3, offset: 2 })).toEqual(sorted.slice(2, 5));
      for (const bad of [{ limit: 10_001 }, { limit: 0 }, { offset: -1 }]) {
        const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, { key: member.api_key, body: { project_id: projectId, ...bad } });
        expect(reply.status, JSON.stringify(bad)).toBe(400);
      }
    });

    it('gives position_in_queue only with include_position: the rank over the whole queue, before filter, limit and offset', async () => {
      const rankIn = (order: SortKey[]) => {
        const sorted = sortedItems(all, order);
        return (item: Item) => sorted.findIndex((s) => s.id === item.id) + 1;
      };
      const query = (body: Record<string, unknown>) => queryItems(server, member.api_key, projectId, queueId, body);

      // Without include_position (or with false): null everywhere.
      for (const body of [{}, { include_position: false }, { filter: { annotation_states: ['unstarted'] }, offset: 1 }]) {
        for (const item of await query(body)) expect(item.position_in_queue).toBeNull();
      }

      // Default order, no filter, with an offset.
      const window = await query({ include_position: true, limit: 3, offset: 2 });
      expect(callIdsOf(window)).toEqual(['z5', 'z4', 'z3']);
      expect(window.map((i) => i.position_in_queue)).toEqual([3, 4, 5]);

      // A state filter plus an offset: ranks are those of the unfiltered queue.
      const unstarted = await query({ include_position: true, filter: { annotation_states: ['unstarted'] }, offset: 1 });
      expect(callIdsOf(unstarted)).toEqual(['z4', 'z3', 'z0']);
      expect(unstarted.map((i) => i.position_in_queue)).toEqual([4, 5, 8]);

      // A non-default sort, no filter, with limit and offset.
      const opDesc: SortKey[] = [{ field: 'call_op_name', direction: 'desc' }];
      const sortedPage = await query({ include_position: true, sort_by: opDesc, limit: 3, offset: 1 });
      expect(callIdsOf(sortedPage)).toEqual(['z3', 'z4', 'z0']);
      expect(sortedPage.map((i) => i.position_in_queue)).toEqual([2, 3, 4]);

      // A non-default sort with a state filter and an offset.
      const startedDesc: SortKey[] = [{ field: 'call_started_at', direction: 'desc' }];
      const finished = await query({ include_position: true, sort_by: startedDesc, filter: { annotation_states: ['completed', 'skipped'] }, offset: 1 });
      expect(finished.map((i) => i.position_in_queue)).toEqual(finished.map(rankIn(startedDesc)));
      // z1 (04s) is rank 2, z6 and z2 (both 01s) ranks 6 and 7, by id: z6 was added first.
      expect(callIdsOf(finished)).toEqual(['z6', 'z2']);
      expect(finished.map((i) => i.position_in_queue)).toEqual([6, 7]);

      // Other filters too, and a filter with a limit.
      const chat = await query({ include_position: true, sort_by: opDesc, filter: { call_op_names: ['chat'] }, limit: 2 });
      expect(callIdsOf(chat)).toEqual(['z7', 'z5']);
      expect(chat.map((i) => i.position_in_queue)).toEqual([5, 6]);
      const byOther = await query({ include_position: true, filter: { added_by: [other.user_id] } });
      expect(byOther.map((i) => i.position_in_queue)).toEqual([6, 7, 8]);
    });
  });

  describe('deleting items', () => {
    it('answers {item} with deleted_at, then 404; the item leaves queries, positions and stats', async () => {
      const projectId = 'acme/item-delete';
      const { queueId, items } = await queueWithItems(server, member.api_key, projectId, 4);
      const [first, second, third, fourth] = items as [Item, Item, Item, Item];
      expect((await progress(server, member.api_key, projectId, queueId, second.id, 'completed')).status).toBe(200);
      const path = `/annotation_queues/${queueId}/items/${second.id}${projectQuery(projectId)}`;

      expect((await rest(server, 'DELETE', path, { key: viewer.api_key })).status).toBe(403);
      const deleted = await rest(server, 'DELETE', path, { key: member.api_key });
      expect(deleted.status, deleted.text).toBe(200);
      expect(deleted.body.item).toMatchObject({
        id: second.id,
        queue_id: queueId,
        call_id: second.call_id,
        deleted_at: expect.stringMatching(TIMESTAMP),
        position_in_queue: null,
      });
      expect(Object.keys(deleted.body.item).sort()).toEqual(Object.keys(first).sort());

      const again = await rest(server, 'DELETE', path, { key: member.api_key });
      expect(again.status).toBe(404);
      expect((await progress(server, member.api_key, projectId, queueId, second.id, 'completed')).status).toBe(404);
      expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/no-such-item${projectQuery(projectId)}`, { key: member.api_key })).status).toBe(404);

      const left = await queryItems(server, member.api_key, projectId, queueId, { include_position: true, filter: { call_ids: [third.call_id, fourth.call_id] } });
      expect(ids(left)).toEqual([third.id, fourth.id]);
      expect(left.map((i) => i.position_in_queue)).toEqual([2, 3]);
      expect(ids(await queryItems(server, member.api_key, projectId, queueId))).toEqual([first.id, third.id, fourth.id]);
      expect(await queryItems(server, member.api_key, projectId, queueId, { filter: { call_ids: [second.call_id] } })).toEqual([]);
      const s = await stats(server, member.api_key, projectId, queueId);
      expect(s).toMatchObject({ total_items: 3, completed_items: 0, by_state: { unstarted: 3, in_progress: 0, completed: 0, skipped: 0 }, by_annotator: [] });

      // The call can be put in the queue again: the deleted item no longer holds its place.
      expect(await addItems(server, member.api_key, projectId, queueId, [second.call_id])).toEqual({ added_count: 1, duplicates: [], missing_call_ids: [] });
      expect((await stats(server, member.api_key, projectId, queueId)).total_items).toBe(4);
    });
  });

  describe('stats', () => {
    it('counts total_items, completed_items, by_state (shown state) and by_annotator', async () => {
      const projectId = 'acme/stats';
      const { queueId, items } = await queueWithItems(server, member.api_key, projectId, 6);
      const emptyQueue = await createQueue(server, member.api_key, projectId);
      const third = await createUser(server, { entity: 'acme' });
      const set = async (key: string, index: number, state: string) =>
        expect((await progress(server, key, projectId, queueId, items[index]!.id, state)).status).toBe(200);
      await set(member.api_key, 0, 'completed');
      await set(member.api_key, 1, 'skipped');
      await set(member.api_key, 2, 'in_progress');
      await set(other.api_key, 0, 'in_progress'); // item 0 now shows in_progress, yet one annotator finished it
      await set(other.api_key, 3, 'completed');
      await set(third.api_key, 3, 'skipped');
      await set(third.api_key, 4, 'in_progress');
      await set(third.api_key, 4, 'completed');

      const reply = await rest(server, 'POST', '/annotation_queues/stats', {
        key: viewer.api_key,
        body: { project_id: projectId, queue_ids: [queueId, emptyQueue] },
      });
      expect(reply.status, reply.text).toBe(200);
      const sortByUser = <T extends { annotator_user_id: string }>(rows: T[]) => [...rows].sort((a, b) => (a.annotator_user_id < b.annotator_user_id ? -1 : 1));
      const [mine, empty] = reply.body.stats;
      expect({ ...mine, by_annotator: sortByUser(mine.by_annotator) }).toEqual({
        queue_id: queueId,
        total_items: 6,
        completed_items: 4, // items 0, 1, 3 and 4 each have an annotator who completed or skipped them
        done_items: 4, // one annotation per item asked for
        by_state: { unstarted: 1, in_progress: 2, completed: 1, skipped: 2 },
        by_annotator: sortByUser([
          { annotator_user_id: member.user_id, in_progress: 1, completed: 1, skipped: 1 },
          { annotator_user_id: other.user_id, in_progress: 1, completed: 1, skipped: 0 },
          { annotator_user_id: third.user_id, in_progress: 0, completed: 1, skipped: 1 },
        ]),
        by_assignee: [], // an open queue, no item assigned
      });
      expect(empty).toEqual({
        queue_id: emptyQueue,
        total_items: 0,
        completed_items: 0,
        done_items: 0,
        by_state: { unstarted: 0, in_progress: 0, completed: 0, skipped: 0 },
        by_annotator: [],
        by_assignee: [],
      });
      const unknown = await rest(server, 'POST', '/annotation_queues/stats', { key: member.api_key, body: { project_id: projectId, queue_ids: [queueId, 'nope'] } });
      expect(unknown.status).toBe(404);
      expect((await rest(server, 'POST', '/annotation_queues/stats', { key: member.api_key, body: { project_id: projectId, queue_ids: [] } })).status).toBe(400);
      expect((await rest(server, 'POST', '/annotation_queues/stats', { key: member.api_key, body: { project_id: 'acme/stats-other', queue_ids: [queueId] } })).status).toBe(404);
    });

    it('counts as done only the items with as many finishing annotators as annotations_per_item', async () => {
      const projectId = 'acme/stats-two';
      const { queueId, items } = await queueWithItems(server, member.api_key, projectId, 4, { annotations_per_item: 2 });
      const third = await createUser(server, { entity: 'acme' });
      const set = async (key: string, index: number, state: string) =>
        expect((await progress(server, key, projectId, queueId, items[index]!.id, state)).status).toBe(200);
      await set(member.api_key, 0, 'completed');
      await set(other.api_key, 0, 'skipped'); // two finishers: done
      await set(member.api_key, 1, 'completed');
      await set(other.api_key, 1, 'in_progress'); // one finisher, one at work: not done
      await set(third.api_key, 2, 'completed'); // one finisher: not done
      await set(member.api_key, 3, 'completed');
      await set(other.api_key, 3, 'completed');
      await set(third.api_key, 3, 'completed'); // three finishers: done
      const s = await stats(server, viewer.api_key, projectId, queueId);
      expect(s).toMatchObject({ total_items: 4, completed_items: 4, done_items: 2 });
    });
  });
});

describeEachBackend('add-items with a very long list of call ids', (backend) => {
  const MAX = 150_000;
  let server: TestServer;
  let member: CreatedKeyForTest;
  const projectId = 'acme/long-adds';
  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_MAX_CALL_IDS: String(MAX) });
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  it('finds the repeated ids in time linear in the list (120,000 distinct ids, most of them missing)', async () => {
    const queueId = await createQueue(server, member.api_key, projectId);
    const real = await createSomeCalls(server, member.api_key, projectId, 3);
    const missing = Array.from({ length: 120_000 }, (_, i) => `missing-${i}`);
    // Each repeat after the first occurrence is reported once per repeat, in request order.
    const callIds = [...real, ...missing, real[0]!, 'missing-7', real[0]!];
    const started = performance.now();
    const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, { key: member.api_key, body: { project_id: projectId, call_ids: callIds } });
    const ms = performance.now() - started;
    expect(reply.status, reply.text.slice(0, 300)).toBe(200);
    expect(reply.body.added_count).toBe(3);
    expect(reply.body.duplicates).toEqual([real[0], 'missing-7', real[0]]);
    expect(reply.body.missing_call_ids).toHaveLength(120_000);
    expect(reply.body.missing_call_ids.slice(0, 2)).toEqual(['missing-0', 'missing-1']);
    // A comparison of every id with every earlier one took 15 s here; the whole request takes well under 1 s.
    expect(ms, `the request took ${Math.round(ms)} ms`).toBeLessThan(6_000);
    expect((await queryItems(server, member.api_key, projectId, queueId, { limit: 10 })).map((item) => item.call_id).sort()).toEqual([...real].sort());
  });
});
