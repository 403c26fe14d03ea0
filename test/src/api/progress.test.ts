import { TRPCClientError } from '@trpc/client';
import { createKey, unitOfWork } from '@loupe/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { basic, client, createUser, rest, type CreatedKeyForTest, type Reply } from '../harness/http.ts';
import { progress, projectQuery, queryItems, queueWithItems, stats, TIMESTAMP, type Item } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

type State = 'in_progress' | 'completed' | 'skipped';
const STATES: State[] = ['in_progress', 'completed', 'skipped'];

const ITEM_FIELDS = [
  'id',
  'project_id',
  'queue_id',
  'call_id',
  'call_started_at',
  'call_ended_at',
  'call_op_name',
  'call_trace_id',
  'display_fields',
  'annotation_state',
  'annotator_user_id',
  'added_by',
  'created_at',
  'created_by',
  'updated_at',
  'deleted_at',
  'position_in_queue',
  'assigned_user_id',
  'annotations_required',
].sort();

/** Contract 4.1, one row per (this annotator's current state, requested state). */
const TRANSITIONS: { current: State | null; requested: State; result: 'recorded' | 'unchanged' | 'refused' }[] = [
  { current: null, requested: 'in_progress', result: 'recorded' },
  { current: null, requested: 'completed', result: 'recorded' },
  { current: null, requested: 'skipped', result: 'recorded' },
  { current: 'in_progress', requested: 'completed', result: 'recorded' },
  { current: 'in_progress', requested: 'skipped', result: 'recorded' },
  { current: 'in_progress', requested: 'in_progress', result: 'unchanged' },
  { current: 'completed', requested: 'completed', result: 'unchanged' },
  { current: 'skipped', requested: 'skipped', result: 'unchanged' },
  { current: 'completed', requested: 'in_progress', result: 'refused' },
  { current: 'completed', requested: 'skipped', result: 'refused' },
  { current: 'skipped', requested: 'in_progress', result: 'refused' },
  { current: 'skipped', requested: 'completed', result: 'refused' },
];

const counts = (state: State | null) => ({ in_progress: 0, completed: 0, skipped: 0, ...(state ? { [state]: 1 } : {}) });

describeEachBackend('progress of a queue item', (backend) => {
  let server: TestServer;
  let alice: CreatedKeyForTest;
  let bob: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    alice = await createUser(server, { entity: 'acme', role: 'member' });
    bob = await createUser(server, { entity: 'acme', role: 'admin' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    outsider = await createUser(server, { entity: 'elsewhere', role: 'member' });
  });
  afterAll(() => server?.stop());

  /** The item as the items query shows it now. */
  async function itemNow(projectId: string, queueId: string, itemId: string): Promise<Item> {
    const [item] = (await queryItems(server, alice.api_key, projectId, queueId, { limit: 10_000 })).filter((i) => i.id === itemId);
    expect(item).toBeDefined();
    return item!;
  }

  const annotatorRow = (s: Awaited<ReturnType<typeof stats>>, userId: string) => s.by_annotator.find((row) => row.annotator_user_id === userId);

  it('covers every (current, requested) pair exactly once', () => {
    const pairs = new Set(TRANSITIONS.map((row) => `${row.current}>${row.requested}`));
    expect(pairs.size).toBe(12);
    for (const current of [null, ...STATES]) for (const requested of STATES) expect(pairs.has(`${current}>${requested}`)).toBe(true);
  });

  describe('the transition table', () => {
    for (const { current, requested, result } of TRANSITIONS) {
      it(`${current ?? 'none'} → ${requested}: ${result}`, async () => {
        const projectId = 'acme/transitions';
        const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 1);
        const item = items[0]!;
        if (current) expect((await progress(server, alice.api_key, projectId, queueId, item.id, current)).status).toBe(200);
        // Bob updates later: his record is the shown one unless Alice's request writes a newer one.
        expect((await progress(server, bob.api_key, projectId, queueId, item.id, 'in_progress')).status).toBe(200);
        const before = await stats(server, alice.api_key, projectId, queueId);

        const reply = await progress(server, alice.api_key, projectId, queueId, item.id, requested);
        const after = await stats(server, alice.api_key, projectId, queueId);
        const shown = await itemNow(projectId, queueId, item.id);
        expect(shown.updated_at).toBe(item.updated_at);
        expect(annotatorRow(after, bob.user_id)).toEqual({ annotator_user_id: bob.user_id, ...counts('in_progress') });

        if (result === 'recorded') {
          expect(reply.status, reply.text).toBe(200);
          expect(reply.body.item).toMatchObject({ id: item.id, annotation_state: requested, annotator_user_id: alice.user_id });
          expect(annotatorRow(after, alice.user_id)).toEqual({ annotator_user_id: alice.user_id, ...counts(requested) });
          expect(shown).toMatchObject({ annotation_state: requested, annotator_user_id: alice.user_id });
        } else if (result === 'unchanged') {
          expect(reply.status, reply.text).toBe(200);
          // Nothing written: Bob's later record is still the shown one, and Alice still has one record.
          expect(reply.body.item).toMatchObject({ id: item.id, annotation_state: 'in_progress', annotator_user_id: bob.user_id });
          expect(shown).toMatchObject({ annotation_state: 'in_progress', annotator_user_id: bob.user_id });
          expect(after).toEqual(before);
          expect(annotatorRow(after, alice.user_id)).toEqual({ annotator_user_id: alice.user_id, ...counts(current) });
        } else {
          expect(reply.status, reply.text).toBe(400);
          expect(reply.body.code).toBe('BAD_REQUEST');
          expect(reply.body.reason).toBe(`invalid state transition from ${current} to ${requested}`);
          expect(shown).toMatchObject({ annotation_state: 'in_progress', annotator_user_id: bob.user_id });
          expect(after).toEqual(before);
          expect(annotatorRow(after, alice.user_id)).toEqual({ annotator_user_id: alice.user_id, ...counts(current) });
        }
      });
    }
  });

  it('refuses unstarted and any other state value with a 400 naming the allowed values', async () => {
    const projectId = 'acme/values';
    const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 1);
    for (const state of ['unstarted', 'done', 'COMPLETED', '', null, 1, ['completed']]) {
      const reply = await progress(server, alice.api_key, projectId, queueId, items[0]!.id, state);
      expect(reply.status, JSON.stringify(state)).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      for (const allowed of STATES) expect(reply.body.reason).toContain(allowed);
      expect(reply.body.reason).toContain('annotation_state');
    }
    const missing = await rest(server, 'POST', `/annotation_queues/${queueId}/items/${items[0]!.id}/progress`, {
      key: alice.api_key,
      body: { project_id: projectId },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.reason).toContain('annotation_state');
    expect((await stats(server, alice.api_key, projectId, queueId)).by_annotator).toEqual([]);
  });

  it('checks in order: credentials, body, project access, queue and item, transition', async () => {
    const projectId = 'acme/order';
    const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 2);
    const [item, gone] = items as [Item, Item];
    const { queueId: otherQueue, items: otherItems } = await queueWithItems(server, alice.api_key, projectId, 1);
    const { queueId: foreignQueue, items: foreignItems } = await queueWithItems(server, alice.api_key, 'acme/order-other', 1);
    // Alice completes an item that is then deleted: moving it back would be a bad transition, but the 404 comes first.
    expect((await progress(server, alice.api_key, projectId, queueId, gone.id, 'completed')).status).toBe(200);
    expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/${gone.id}${projectQuery(projectId)}`, { key: alice.api_key })).status).toBe(200);

    const post = (path: string, body: unknown, authorization?: string) =>
      rest(server, 'POST', path, { body, ...(authorization ? { headers: { authorization } } : {}) });
    const path = (q: string, i: string) => `/annotation_queues/${q}/items/${i}/progress`;
    const here = path(queueId, item.id);
    const badBody = { project_id: projectId, annotation_state: 'unstarted' };
    const good = { project_id: projectId, annotation_state: 'completed' };

    const expectStatus = (reply: Reply, status: number, code: string) => {
      expect(reply.status, reply.text).toBe(status);
      expect(reply.body.code).toBe(code);
    };
    // 401 before 400: no or bad credentials with a bad body.
    expectStatus(await post(here, badBody), 401, 'UNAUTHORIZED');
    expectStatus(await post(here, { nonsense: true }, basic('lp_nope')), 401, 'UNAUTHORIZED');
    expectStatus(await post(path('nope', 'nope'), badBody, basic('lp_nope')), 401, 'UNAUTHORIZED');
    // 400 before 403: good credentials, bad body, a project the caller may not touch.
    expectStatus(await post(here, { project_id: 'elsewhere/p', annotation_state: 'unstarted' }, basic(alice.api_key)), 400, 'BAD_REQUEST');
    expectStatus(await post(here, { ...badBody }, basic(outsider.api_key)), 400, 'BAD_REQUEST');
    expectStatus(await post(here, { ...badBody }, basic(viewer.api_key)), 400, 'BAD_REQUEST');
    expectStatus(await post(here, { ...good, project_id: 'not-a-project' }, basic(alice.api_key)), 400, 'BAD_REQUEST');
    // 403 before 404: a good body, but a non-member or a viewer, for items that do not exist.
    expectStatus(await post(here, good, basic(outsider.api_key)), 403, 'FORBIDDEN');
    expectStatus(await post(path('nope', 'nope'), good, basic(outsider.api_key)), 403, 'FORBIDDEN');
    expectStatus(await post(here, good, basic(viewer.api_key)), 403, 'FORBIDDEN');
    expectStatus(await post(path('nope', 'nope'), good, basic(viewer.api_key)), 403, 'FORBIDDEN');
    // 404: unknown queue, unknown item, an item of another queue, of another project, a deleted item.
    expectStatus(await post(path('nope', item.id), good, basic(alice.api_key)), 404, 'NOT_FOUND');
    expectStatus(await post(path(queueId, 'nope'), good, basic(alice.api_key)), 404, 'NOT_FOUND');
    expectStatus(await post(path(queueId, otherItems[0]!.id), good, basic(alice.api_key)), 404, 'NOT_FOUND');
    expectStatus(await post(path(otherQueue, item.id), good, basic(alice.api_key)), 404, 'NOT_FOUND');
    expectStatus(await post(path(foreignQueue, foreignItems[0]!.id), good, basic(alice.api_key)), 404, 'NOT_FOUND');
    expectStatus(await post(path(queueId, gone.id), { project_id: projectId, annotation_state: 'in_progress' }, basic(alice.api_key)), 404, 'NOT_FOUND');
    // Only then the transition.
    expect((await post(here, good, basic(alice.api_key))).status).toBe(200);
    const refused = await post(here, { project_id: projectId, annotation_state: 'skipped' }, basic(alice.api_key));
    expectStatus(refused, 400, 'BAD_REQUEST');
    expect(refused.body.reason).toBe('invalid state transition from completed to skipped');

    // None of the refused requests wrote anything.
    const s = await stats(server, alice.api_key, projectId, queueId);
    expect(s.by_annotator).toEqual([{ annotator_user_id: alice.user_id, in_progress: 0, completed: 1, skipped: 0 }]);
    expect((await stats(server, alice.api_key, projectId, otherQueue)).by_annotator).toEqual([]);
  });

  // A body that is not even JSON still waits for the credentials check (4.1: 401 before 400).
  it('answers 401 for missing or bad credentials with a malformed JSON body, and 400 PARSE_ERROR with good ones', async () => {
    const projectId = 'acme/order-json';
    const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 1);
    const path = `/annotation_queues/${queueId}/items/${items[0]!.id}/progress`;
    for (const authorization of [undefined, basic('lp_nope')]) {
      const reply = await rest(server, 'POST', path, {
        raw: '{"project_id": ',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      });
      expect(reply.status, reply.text).toBe(401);
    }
    const reply = await rest(server, 'POST', path, {
      raw: '{"project_id": ',
      headers: { 'content-type': 'application/json', authorization: basic(alice.api_key) },
    });
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body).toMatchObject({ code: 'PARSE_ERROR', reason: expect.stringMatching(/^Malformed JSON/), request_id: expect.any(String) });
  });

  it('returns the item with every field, its shown state, position_in_queue null and updated_at unchanged', async () => {
    const projectId = 'acme/shown';
    const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 2);
    const [item, untouched] = items as [Item, Item];
    expect(item).toMatchObject({ annotation_state: 'unstarted', annotator_user_id: null });

    const first = await progress(server, alice.api_key, projectId, queueId, item.id, 'in_progress');
    expect(first.status, first.text).toBe(200);
    expect(Object.keys(first.body)).toEqual(['item']);
    expect(Object.keys(first.body.item).sort()).toEqual(ITEM_FIELDS);
    expect(first.body.item).toEqual({ ...item, annotation_state: 'in_progress', annotator_user_id: alice.user_id, position_in_queue: null });
    expect(first.body.item.updated_at).toBe(item.updated_at);

    // Bob's newer record becomes the shown one; Alice's later update takes it back.
    const second = await progress(server, bob.api_key, projectId, queueId, item.id, 'skipped');
    expect(second.body.item).toMatchObject({ annotation_state: 'skipped', annotator_user_id: bob.user_id, position_in_queue: null });
    const third = await progress(server, alice.api_key, projectId, queueId, item.id, 'completed');
    expect(third.body.item).toMatchObject({ annotation_state: 'completed', annotator_user_id: alice.user_id, updated_at: item.updated_at });

    const now = await itemNow(projectId, queueId, item.id);
    expect(now).toEqual({ ...item, annotation_state: 'completed', annotator_user_id: alice.user_id });
    const other = await itemNow(projectId, queueId, untouched.id);
    expect(other).toMatchObject({ annotation_state: 'unstarted', annotator_user_id: null });
    for (const field of ITEM_FIELDS) expect(other, field).toHaveProperty(field);
    expect(other.call_ended_at).toBeNull();
    expect(other.deleted_at).toBeNull();
    // Even with include_position, the progress response carries no position.
    const positioned = await queryItems(server, alice.api_key, projectId, queueId, { include_position: true });
    expect(positioned.map((i) => i.position_in_queue)).toEqual([1, 2]);
    const fourth = await progress(server, bob.api_key, projectId, queueId, untouched.id, 'completed');
    expect(fourth.body.item.position_in_queue).toBeNull();
    expect(fourth.body.item.created_at).toMatch(TIMESTAMP);
  });

  it('takes the annotator from the credentials only: svc_user_id or any unknown field is a 400 and records nothing', async () => {
    const projectId = 'acme/strict';
    const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 1);
    const item = items[0]!;
    const path = `/annotation_queues/${queueId}/items/${item.id}/progress`;
    for (const extra of [
      { svc_user_id: bob.user_id },
      { svc_user_id: alice.user_id },
      { annotator_user_id: bob.user_id },
      { user_id: bob.user_id },
      { colour: 'red' },
    ]) {
      const reply = await rest(server, 'POST', path, { key: alice.api_key, body: { project_id: projectId, annotation_state: 'completed', ...extra } });
      expect(reply.status, JSON.stringify(extra)).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason).toContain(Object.keys(extra)[0]);
    }
    expect((await stats(server, alice.api_key, projectId, queueId)).by_annotator).toEqual([]);
    expect(await itemNow(projectId, queueId, item.id)).toMatchObject({ annotation_state: 'unstarted', annotator_user_id: null });

    // Two keys of one user are one annotator; the recorded user is the key's owner.
    const second = await createKey(unitOfWork(server.server.services.orm), alice.username);
    expect((await progress(server, alice.api_key, projectId, queueId, item.id, 'in_progress')).body.item.annotator_user_id).toBe(alice.user_id);
    const done = await rest(server, 'POST', path, {
      headers: { authorization: basic(second.api_key, alice.username) },
      body: { project_id: projectId, annotation_state: 'completed' },
    });
    expect(done.status, done.text).toBe(200);
    expect(done.body.item.annotator_user_id).toBe(alice.user_id);
    expect((await stats(server, alice.api_key, projectId, queueId)).by_annotator).toEqual([
      { annotator_user_id: alice.user_id, in_progress: 0, completed: 1, skipped: 0 },
    ]);
  });

  it('behaves the same through the typed tRPC client', async () => {
    const projectId = 'acme/trpc';
    const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 1);
    const item = items[0]!;
    const api = client(server, alice.api_key).annotationQueues.items.progress;
    const input = { queue_id: queueId, item_id: item.id, project_id: projectId };

    const started = await api.mutate({ ...input, annotation_state: 'in_progress' });
    expect(started.item).toEqual({ ...item, annotation_state: 'in_progress', annotator_user_id: alice.user_id, position_in_queue: null });
    const same = await api.mutate({ ...input, annotation_state: 'in_progress' });
    expect(same.item).toEqual(started.item);
    const done = await api.mutate({ ...input, annotation_state: 'completed' });
    expect(done.item.annotation_state).toBe('completed');

    const failure = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TRPCClientError);
      return error as TRPCClientError<any>;
    };
    const refused = await failure(api.mutate({ ...input, annotation_state: 'skipped' }));
    expect(refused.data?.httpStatus).toBe(400);
    expect(refused.message).toBe('invalid state transition from completed to skipped');
    expect(refused.shape?.reason).toBe('invalid state transition from completed to skipped');

    const unstarted = await failure(api.mutate({ ...input, annotation_state: 'unstarted' as 'completed' }));
    expect(unstarted.data?.httpStatus).toBe(400);
    for (const allowed of STATES) expect(unstarted.shape?.reason).toContain(allowed);

    const sneaky = await failure(api.mutate({ ...input, annotation_state: 'completed', svc_user_id: bob.user_id } as typeof input & { annotation_state: 'completed' }));
    expect(sneaky.data?.httpStatus).toBe(400);
    expect(sneaky.shape?.reason).toContain('svc_user_id');

    expect((await failure(client(server, 'lp_nope').annotationQueues.items.progress.mutate({ ...input, annotation_state: 'unstarted' as 'completed' }))).data?.httpStatus).toBe(401);
    expect((await failure(client(server, viewer.api_key).annotationQueues.items.progress.mutate({ ...input, annotation_state: 'completed' }))).data?.httpStatus).toBe(403);
    expect((await failure(api.mutate({ ...input, item_id: 'nope', annotation_state: 'completed' }))).data?.httpStatus).toBe(404);

    const viaBob = await client(server, bob.api_key).annotationQueues.items.progress.mutate({ ...input, annotation_state: 'skipped' });
    expect(viaBob.item).toMatchObject({ annotation_state: 'skipped', annotator_user_id: bob.user_id });
    expect((await stats(server, alice.api_key, projectId, queueId)).by_annotator.map((row) => [row.annotator_user_id, row.completed, row.skipped]).sort()).toEqual(
      [
        [alice.user_id, 1, 0],
        [bob.user_id, 0, 1],
      ].sort(),
    );
  });

  describe('concurrency', () => {
    for (const state of ['in_progress', 'completed'] as const) {
      it(`50 simultaneous requests for one (item, annotator) with state ${state}: all 200, one record, one state`, async () => {
        const projectId = 'acme/concurrent';
        const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 1);
        const item = items[0]!;
        const replies = await Promise.all(Array.from({ length: 50 }, () => progress(server, alice.api_key, projectId, queueId, item.id, state)));
        for (const reply of replies) {
          expect(reply.status, reply.text).toBe(200);
          expect(reply.body.item).toMatchObject({ id: item.id, annotation_state: state, annotator_user_id: alice.user_id });
        }
        const s = await stats(server, alice.api_key, projectId, queueId);
        expect(s.by_annotator).toEqual([{ annotator_user_id: alice.user_id, ...counts(state) }]);
        expect(s.by_state).toEqual({ unstarted: 0, in_progress: 0, completed: 0, skipped: 0, [state]: 1 });
        expect(await itemNow(projectId, queueId, item.id)).toMatchObject({ annotation_state: state, annotator_user_id: alice.user_id });
      });
    }

    it('50 simultaneous requests with mixed states: a reachable final state, 200 or the transition 400, one record', async () => {
      const projectId = 'acme/concurrent-mixed';
      const { queueId, items } = await queueWithItems(server, alice.api_key, projectId, 1);
      const item = items[0]!;
      const requested = Array.from({ length: 50 }, (_, n) => STATES[n % 3]!);
      const replies = await Promise.all(requested.map((state) => progress(server, alice.api_key, projectId, queueId, item.id, state)));

      const s = await stats(server, alice.api_key, projectId, queueId);
      expect(s.by_annotator).toHaveLength(1);
      const row = s.by_annotator[0]!;
      expect(row.annotator_user_id).toBe(alice.user_id);
      expect(row.in_progress + row.completed + row.skipped).toBe(1);
      const final = STATES.find((st) => row[st] === 1)!;
      expect(await itemNow(projectId, queueId, item.id)).toMatchObject({ annotation_state: final, annotator_user_id: alice.user_id });

      const accepted = new Set<string>();
      replies.forEach((reply, n) => {
        if (reply.status === 200) {
          expect(reply.body.item.annotation_state).toBe(requested[n]);
          accepted.add(requested[n]!);
        } else {
          expect(reply.status, reply.text).toBe(400);
          // Only a finished state refuses, and only the final one can have been reached.
          expect(final).not.toBe('in_progress');
          expect(reply.body.reason).toBe(`invalid state transition from ${final} to ${requested[n]}`);
        }
      });
      // Reachable by the table: at most one finished state was ever accepted, and it is the final one.
      const finished = [...accepted].filter((st) => st !== 'in_progress');
      expect(finished.length).toBeLessThanOrEqual(1);
      if (final === 'in_progress') expect([...accepted]).toEqual(['in_progress']);
      else expect(finished).toEqual([final]);
    });
  });
});
