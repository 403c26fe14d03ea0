import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import {
  allFeedback,
  batchCreate,
  callRefOf,
  createSpec,
  freeForm,
  objectRefOf,
  queryFeedback,
  type FeedbackElement,
} from '../harness/feedback.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createQueue, TIMESTAMP, UUID_V7 } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Contract 4.2: POST /feedback/batch/create (identity, access, all or nothing, idempotent retries,
// limits, created_at), /feedback/create, /feedback/query, /feedback/purge, /feedback/replace.
// Storage is always checked through POST /feedback/query.

/** A UUID whose first hex digit is `lead`, so tests control the id order. */
const idStartingWith = (lead: string) => `${lead}${randomUUID().slice(1)}`;

describeEachBackend('feedback', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let member2: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    member2 = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    outsider = await createUser(server, { entity: 'globex', role: 'member' });
  });
  afterAll(() => server?.stop());

  const create = (batch: unknown[], key = member.api_key) => batchCreate(server, key, batch);
  const stored = (projectId: string, body: Record<string, unknown> = {}, key = member.api_key) => queryFeedback(server, key, projectId, body);
  const ids = (records: { id: string }[]) => records.map((r) => r.id);

  it('says in Loupe-New-Records how many records the request stored anew: a retry by id stores none', async () => {
    const projectId = 'acme/new-records';
    const elements = [0, 1, 2].map((n) => freeForm(projectId, { feedback_type: 'note', payload: { n } }));
    const first = await create(elements);
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('loupe-new-records')).toBe('3');
    const retried = await create([...elements, freeForm(projectId, { feedback_type: 'note', payload: { n: 3 } })]);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get('loupe-new-records')).toBe('1');
    expect(await stored(projectId)).toHaveLength(4);
  });

  it('returns one result per element, in input order, and stores every request field plus created_at and svc_user_id', async () => {
    const projectId = 'acme/basic';
    const queueId = await createQueue(server, member.api_key, projectId);
    const elements = [
      freeForm(projectId, { feedback_type: 'first', payload: { n: 1 } }),
      freeForm(projectId, { feedback_type: 'second', payload: { n: 2 }, creator: 'end user', queue_id: queueId }),
      { ...freeForm(projectId, { feedback_type: 'third', payload: { n: 3 } }), id: undefined },
    ];
    delete elements[2]!.id;
    const reply = await create(elements);
    expect(reply.status, reply.text).toBe(200);
    const res = reply.body.res;
    expect(res).toHaveLength(3);
    expect(res.map((r: { payload: unknown }) => r.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(res[0].id).toBe(elements[0]!.id);
    expect(res[1].id).toBe(elements[1]!.id);
    expect(res[2].id).toMatch(UUID_V7);
    for (const r of res) expect(Object.keys(r).sort()).toEqual(['created_at', 'id', 'payload', 'svc_user_id']);
    const records = await stored(projectId, { filter: { ids: [res[1].id] } });
    expect(records).toEqual([
      {
        id: res[1].id,
        project_id: projectId,
        svc_ref: elements[1]!.svc_ref,
        feedback_type: 'second',
        payload: { n: 2 },
        creator: 'end user',
        annotation_ref: null,
        runnable_ref: null,
        call_ref: null,
        trigger_ref: null,
        queue_id: queueId,
        svc_user_id: member.user_id,
        created_at: res[1].created_at,
      },
    ]);
    expect((await stored(projectId)).map((r) => r.feedback_type).sort()).toEqual(['first', 'second', 'third']);
  });

  it('sets svc_user_id from the credentials: a value in the body is ignored', async () => {
    const projectId = 'acme/identity';
    const mine = freeForm(projectId, { svc_user_id: outsider.user_id });
    const theirs = freeForm(projectId, { svc_user_id: member.user_id });
    const reply = await create([mine]);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.res[0].svc_user_id).toBe(member.user_id);
    const reply2 = await create([theirs], member2.api_key);
    expect(reply2.status, reply2.text).toBe(200);
    expect(reply2.body.res[0].svc_user_id).toBe(member2.user_id);
    const records = await stored(projectId);
    expect(Object.fromEntries(records.map((r) => [r.id, r.svc_user_id]))).toEqual({ [mine.id as string]: member.user_id, [theirs.id as string]: member2.user_id });
    expect(await stored(projectId, { filter: { svc_user_id: outsider.user_id } })).toEqual([]);
    // Through POST /feedback/create too.
    const single = await rest(server, 'POST', '/feedback/create', { key: member2.api_key, body: freeForm(projectId, { svc_user_id: 'someone-else' }) });
    expect(single.status, single.text).toBe(200);
    expect(single.body.svc_user_id).toBe(member2.user_id);
    expect((await stored(projectId, { filter: { ids: [single.body.id] } }))[0]?.svc_user_id).toBe(member2.user_id);
  });

  it('answers 401 without credentials and stores nothing', async () => {
    const projectId = 'acme/anonymous';
    const element = freeForm(projectId);
    const reply = await rest(server, 'POST', '/feedback/batch/create', { body: { batch: [element] } });
    expect(reply.status).toBe(401);
    expect(await stored(projectId)).toEqual([]);
  });

  it("answers 403 for a project of another entity, or a viewer's write, and stores nothing of the batch", async () => {
    const own = 'acme/access';
    const foreign = 'globex/access';
    const cases: { name: string; batch: FeedbackElement[]; key: string }[] = [
      { name: 'another entity', batch: [freeForm(foreign)], key: member.api_key },
      { name: 'own project then another entity', batch: [freeForm(own), freeForm(foreign)], key: member.api_key },
      { name: 'viewer', batch: [freeForm(own)], key: viewer.api_key },
      { name: 'viewer, reaction', batch: [freeForm(own, { feedback_type: 'svc.reaction.1', payload: { emoji: '👍' } })], key: viewer.api_key },
    ];
    for (const c of cases) {
      const reply = await create(c.batch, c.key);
      expect(reply.status, `${c.name}: ${reply.text}`).toBe(403);
      expect(reply.body.code).toBe('FORBIDDEN');
    }
    expect(await stored(own)).toEqual([]);
    expect(await queryFeedback(server, outsider.api_key, foreign)).toEqual([]);
    // The viewer may read; the outsider may not read acme's projects.
    expect(await stored(own, {}, viewer.api_key)).toEqual([]);
    expect((await rest(server, 'POST', '/feedback/query', { key: outsider.api_key, body: { project_id: own } })).status).toBe(403);
    // Single create and replace follow the same rule.
    expect((await rest(server, 'POST', '/feedback/create', { key: viewer.api_key, body: freeForm(own) })).status).toBe(403);
    expect((await rest(server, 'POST', '/feedback/create', { key: member.api_key, body: freeForm(foreign) })).status).toBe(403);
    expect(await stored(own)).toEqual([]);
  });

  it('is all or nothing: one bad element (index 999) in a batch of 1,000 stores nothing and is named in the reason', async () => {
    const projectId = 'acme/thousand';
    const batch = Array.from({ length: 1000 }, (_, i) => freeForm(projectId, { payload: { i } }));
    batch[999] = freeForm(projectId, { feedback_type: 'svc.note.1', payload: { note: '' } });
    const reply = await create(batch);
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body.reason).toContain('batch[999]');
    expect(reply.body.reason).toContain('payload.note');
    expect(await stored(projectId, { limit: 10_000 })).toEqual([]);
    // The same batch with a schema violation (rather than a rule) at 999.
    batch[999] = freeForm(projectId, { unknown_field: 1 });
    const schema = await create(batch);
    expect(schema.status, schema.text).toBe(400);
    expect(schema.body.reason).toContain('batch[999]');
    expect(await stored(projectId, { limit: 10_000 })).toEqual([]);
    // Fixed, the whole batch is stored.
    batch[999] = freeForm(projectId, { payload: { i: 999 } });
    const fixed = await create(batch);
    expect(fixed.status, fixed.text).toBe(200);
    expect(await allFeedback(server, member.api_key, projectId)).toHaveLength(1000);
  });

  it('answers an empty batch with {res: []}', async () => {
    const reply = await create([]);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({ res: [] });
    const viaTrpc = await client(server, member.api_key).feedback.batchCreate.mutate({ batch: [] });
    expect(viaTrpc).toEqual({ res: [] });
  });

  it('gives every element of a batch the same created_at: the time the request was accepted', async () => {
    const projectId = 'acme/created-at';
    const batch = Array.from({ length: 50 }, (_, i) => freeForm(projectId, { payload: { i } }));
    const start = Date.now();
    const reply = await create(batch);
    const end = Date.now();
    expect(reply.status, reply.text).toBe(200);
    const times = new Set(reply.body.res.map((r: { created_at: string }) => r.created_at));
    expect(times.size).toBe(1);
    const [createdAt] = [...times] as string[];
    expect(createdAt).toMatch(TIMESTAMP);
    expect(Date.parse(createdAt!)).toBeGreaterThanOrEqual(start);
    expect(Date.parse(createdAt!)).toBeLessThanOrEqual(end);
    const records = await stored(projectId, { limit: 100 });
    expect(records).toHaveLength(50);
    expect(new Set(records.map((r) => r.created_at))).toEqual(new Set([createdAt]));
  });

  it('makes retries idempotent: resending a batch returns the original results and stores nothing new', async () => {
    const projectId = 'acme/retry';
    const batch = [
      freeForm(projectId, { payload: { a: 1, b: [1, 2], c: { d: 'x' } } }),
      freeForm(projectId, { feedback_type: 'svc.reaction.1', payload: { emoji: '👍🏽' } }),
      freeForm(projectId, { feedback_type: 'svc.note.1', payload: { note: 'keep' }, creator: 'ann' }),
    ];
    const first = await create(batch);
    expect(first.status, first.text).toBe(200);
    await sleep(15); // a retry is later: a new created_at would show
    const again = await create(batch);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(first.body);
    // Key order is not content; nor is svc_user_id.
    const reordered = batch.map((e) => Object.fromEntries(Object.entries(e).reverse()));
    reordered[0]!.payload = { c: { d: 'x' }, b: [1, 2], a: 1 };
    reordered[1]!.svc_user_id = 'whoever';
    const third = await create(reordered);
    expect(third.status, third.text).toBe(200);
    expect(third.body).toEqual(first.body);
    expect(await stored(projectId)).toHaveLength(3);
    // A retry that adds new elements: old ones keep their results, new ones are stored now.
    const extra = [freeForm(projectId, { payload: { new: 1 } }), freeForm(projectId, { payload: { new: 2 } })];
    const mixed = await create([extra[0], ...batch, extra[1]]);
    expect(mixed.status, mixed.text).toBe(200);
    expect(mixed.body.res.slice(1, 4)).toEqual(first.body.res);
    expect(mixed.body.res[0].created_at).not.toBe(first.body.res[0].created_at);
    expect(mixed.body.res[0].created_at).toBe(mixed.body.res[4].created_at);
    expect(ids(mixed.body.res)).toEqual([extra[0]!.id, ...ids(first.body.res), extra[1]!.id]);
    const all = await stored(projectId);
    expect(all).toHaveLength(5);
    // The stored records keep the first created_at.
    for (const r of first.body.res) expect(all.find((s) => s.id === r.id)?.created_at).toBe(r.created_at);
  });

  it('makes concurrent identical batches store each record once, and all callers see the same results', async () => {
    const projectId = 'acme/concurrent-retry';
    const batch = Array.from({ length: 20 }, (_, i) => freeForm(projectId, { payload: { i } }));
    const replies = await Promise.all(Array.from({ length: 5 }, () => create(batch)));
    for (const reply of replies) expect(reply.status, reply.text).toBe(200);
    for (const reply of replies) expect(reply.body).toEqual(replies[0]!.body);
    expect(await stored(projectId)).toHaveLength(20);
  });

  it('answers 409 when an id exists with different content, and stores nothing of that batch', async () => {
    const projectId = 'acme/conflict';
    const original = freeForm(projectId, { payload: { v: 1 } });
    const first = await create([original]);
    expect(first.status, first.text).toBe(200);
    const changes: { name: string; element: FeedbackElement }[] = [
      { name: 'payload', element: { ...original, payload: { v: 2 } } },
      { name: 'feedback_type', element: { ...original, feedback_type: 'other' } },
      { name: 'svc_ref', element: { ...original, svc_ref: callRefOf(projectId, 'call-2') } },
      { name: 'creator', element: { ...original, creator: 'someone' } },
    ];
    for (const change of changes) {
      const fresh = [freeForm(projectId, { payload: { fresh: 1 } }), freeForm(projectId, { payload: { fresh: 2 } })];
      const reply = await create([fresh[0], change.element, fresh[1]]);
      expect(reply.status, `${change.name}: ${reply.text}`).toBe(409);
      expect(reply.body.code).toBe('CONFLICT');
      expect(reply.body.reason).toContain(original.id);
      expect(await stored(projectId, { filter: { ids: ids(fresh as { id: string }[]) } }), change.name).toEqual([]);
    }
    // The original is untouched.
    const records = await stored(projectId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ id: original.id, payload: { v: 1 }, feedback_type: 'comment', created_at: first.body.res[0].created_at });
    // The same id in another project is another record, not a conflict.
    const elsewhere = await create([{ ...original, project_id: 'acme/conflict-2', svc_ref: callRefOf('acme/conflict-2', 'c'), payload: { v: 9 } }]);
    expect(elsewhere.status, elsewhere.text).toBe(200);
  });

  it('folds the same id twice in one batch: identical is one record with two equal results; different is a 400', async () => {
    const projectId = 'acme/repeats';
    const element = freeForm(projectId, { payload: { same: true } });
    const other = freeForm(projectId);
    const reply = await create([element, other, { ...element }]);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.res).toHaveLength(3);
    expect(reply.body.res[2]).toEqual(reply.body.res[0]);
    expect(reply.body.res[0].id).toBe(element.id);
    expect(await stored(projectId)).toHaveLength(2);

    const projectId2 = 'acme/repeats-different';
    const a = freeForm(projectId2, { payload: { v: 1 } });
    const b = freeForm(projectId2);
    const bad = await create([a, b, { ...a, payload: { v: 2 } }]);
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.reason).toContain('batch[2]');
    expect(bad.body.reason).toContain('id');
    expect(await stored(projectId2)).toEqual([]);
  });

  it('answers 413 for more than 10,000 elements (the default) and stores nothing; 10,000 are stored', async () => {
    const projectId = 'acme/limit';
    const tiny = (i: number) => ({ project_id: projectId, svc_ref: `svc:///${projectId}/call/c`, feedback_type: 't', payload: { i } });
    const over = await create(Array.from({ length: 10_001 }, (_, i) => tiny(i)));
    expect(over.status, over.text.slice(0, 300)).toBe(413);
    expect(over.body.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await stored(projectId)).toEqual([]);
    const exact = await create(Array.from({ length: 10_000 }, (_, i) => tiny(i)));
    expect(exact.status, exact.text.slice(0, 300)).toBe(200);
    expect(exact.body.res).toHaveLength(10_000);
    expect(await allFeedback(server, member.api_key, projectId)).toHaveLength(10_000);
  });

  it('answers 413 above LOUPE_MAX_BATCH before validating the elements', async () => {
    const small = await startTestServer(backend, { LOUPE_MAX_BATCH: '5' });
    try {
      const user = await createUser(small, { entity: 'acme', role: 'member' });
      const projectId = 'acme/limit5';
      const valid = () => freeForm(projectId);
      const invalid = () => ({ project_id: 'not a project', nonsense: true });
      const six = await batchCreate(small, user.api_key, Array.from({ length: 6 }, valid));
      expect(six.status, six.text).toBe(413);
      const sixInvalid = await batchCreate(small, user.api_key, Array.from({ length: 6 }, invalid));
      expect(sixInvalid.status, sixInvalid.text).toBe(413);
      expect(sixInvalid.body.reason).toMatch(/5/);
      // Up to the limit, the elements are validated as usual.
      const fiveInvalid = await batchCreate(small, user.api_key, [valid(), valid(), valid(), valid(), invalid()]);
      expect(fiveInvalid.status, fiveInvalid.text).toBe(400);
      expect(await queryFeedback(small, user.api_key, projectId)).toEqual([]);
      const five = await batchCreate(small, user.api_key, Array.from({ length: 5 }, valid));
      expect(five.status, five.text).toBe(200);
      expect(await queryFeedback(small, user.api_key, projectId)).toHaveLength(5);
      // The typed door answers the same status.
      await expect(client(small, user.api_key).feedback.batchCreate.mutate({ batch: Array.from({ length: 6 }, valid) as never })).rejects.toMatchObject({
        data: { httpStatus: 413 },
      });
      expect(await queryFeedback(small, user.api_key, projectId)).toHaveLength(5);
    } finally {
      await small.stop();
    }
  });

  it('POST /feedback/create stores one element and answers one result', async () => {
    const projectId = 'acme/single';
    const element = freeForm(projectId, { feedback_type: 'svc.reaction.1', payload: { emoji: '🎉' } });
    const reply = await rest(server, 'POST', '/feedback/create', { key: member.api_key, body: element });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({
      id: element.id,
      created_at: expect.stringMatching(TIMESTAMP),
      svc_user_id: member.user_id,
      payload: { emoji: '🎉', alias: ':party_popper:', detoned: '🎉', detoned_alias: ':party_popper:' },
    });
    const records = await stored(projectId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ id: element.id, payload: reply.body.payload, created_at: reply.body.created_at });
    // Idempotent too.
    const again = await rest(server, 'POST', '/feedback/create', { key: member.api_key, body: element });
    expect(again.body).toEqual(reply.body);
    // Invalid → 400 naming the field, nothing stored.
    const bad = await rest(server, 'POST', '/feedback/create', { key: member.api_key, body: freeForm(projectId, { feedback_type: 'svc.note.1', payload: {} }) });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.reason).toContain('payload.note');
    const conflicting = await rest(server, 'POST', '/feedback/create', { key: member.api_key, body: { ...element, payload: { emoji: '👎' } } });
    expect(conflicting.status, conflicting.text).toBe(409);
    expect(await stored(projectId)).toHaveLength(1);
  });

  it('stores any JSON object as payload and returns it equal, on both backends', async () => {
    const projectId = 'acme/json';
    const payloads: Record<string, unknown>[] = [
      { unicode: 'héllo wörld ✓ 日本語 🧑🏽‍🤝‍🧑🏻', quote: '"\\/', newline: 'a\nb\tc' },
      { numbers: [0, -1, 1.5, 1e21, 123456789012345, -0.000001], bools: [true, false], nothing: null },
      { nested: { deep: { deeper: { list: [[], {}, [{}]] } } } },
      { '': 'empty key', 'key with spaces': 1, 'ключ': 2 },
    ];
    for (const payload of payloads) {
      const element = freeForm(projectId, { payload });
      const reply = await create([element]);
      expect(reply.status, `${JSON.stringify(payload)}: ${reply.text}`).toBe(200);
      expect(reply.body.res[0].payload).toEqual(payload);
      expect((await stored(projectId, { filter: { ids: [element.id] } }))[0]?.payload, JSON.stringify(payload)).toEqual(payload);
    }
  });

  it('refuses a payload that is not a JSON object (an array, a string, a number, null) with a 400 naming it, storing nothing of the batch', async () => {
    const projectId = 'acme/not-an-object';
    for (const payload of [[1, 2], 'text', 7, null]) {
      const reply = await create([freeForm(projectId), freeForm(projectId, { payload })]);
      expect(reply.status, `${JSON.stringify(payload)}: ${reply.text}`).toBe(400);
      expect(reply.body.reason).toContain('batch[1].payload');
      expect(reply.body.reason).toContain('expected a JSON object');
    }
    expect(await stored(projectId)).toEqual([]);
  });

  it('stores text the database cannot hold as sent (U+0000, a lone surrogate), or refuses it with a 400 naming the field — never a 5xx', async () => {
    const projectId = 'acme/awkward-text';
    const cases: { name: string; fields: FeedbackElement; field: string }[] = [
      { name: 'U+0000 in a payload string', fields: { payload: { text: 'a\u0000b' } }, field: 'payload' },
      { name: 'U+0000 in a payload key', fields: { payload: { 'a\u0000b': 1 } }, field: 'payload' },
      { name: 'lone surrogate in a payload string', fields: { payload: { text: 'a\ud800b' } }, field: 'payload' },
      { name: 'U+0000 in creator', fields: { creator: 'a\u0000b' }, field: 'creator' },
      { name: 'U+0000 in feedback_type', fields: { feedback_type: 'a\u0000b' }, field: 'feedback_type' },
    ];
    // expect.soft: every case is tried and every failing one reported.
    for (const c of cases) {
      const element = freeForm(projectId, c.fields);
      const reply = await create([freeForm(projectId), element]);
      expect.soft([200, 400], `${c.name}: ${reply.status} ${reply.text}`).toContain(reply.status);
      const records = await stored(projectId, { filter: { ids: [element.id] } });
      if (reply.status === 400) {
        expect.soft(reply.body.reason, c.name).toContain(`batch[1].${c.field}`);
      }
      if (reply.status === 200) {
        expect.soft(records, c.name).toEqual([expect.objectContaining({ ...c.fields, id: element.id })]);
      } else {
        expect.soft(records, c.name).toEqual([]);
      }
    }
    // Filtering on such text finds nothing (or is a 400), never a 5xx.
    const query = await rest(server, 'POST', '/feedback/query', { key: member.api_key, body: { project_id: projectId, filter: { creator: 'x\u0000' } } });
    expect.soft([200, 400], `query with U+0000 in filter.creator: ${query.status} ${query.text}`).toContain(query.status);
  });

  it('treats a client-chosen id case-insensitively: stored lowercase, and a retry in either case is the same record', async () => {
    const projectId = 'acme/id-case';
    const upper = randomUUID().toUpperCase();
    const element = freeForm(projectId, { id: upper });
    const first = await create([element]);
    expect(first.status, first.text).toBe(200);
    expect(first.body.res[0].id).toBe(upper.toLowerCase());
    const sameCase = await create([element]);
    expect(sameCase.body).toEqual(first.body);
    const lowerCase = await create([{ ...element, id: upper.toLowerCase() }]);
    expect(lowerCase.status, lowerCase.text).toBe(200);
    expect(lowerCase.body).toEqual(first.body);
    expect(ids(await stored(projectId))).toEqual([upper.toLowerCase()]);
  });

  describeQuery();
  function describeQuery() {
    const projectId = 'acme/query';
    type Fixture = Record<'a1' | 'a2' | 'a3' | 'b1' | 'b2', string>;
    const id: Fixture = { a1: idStartingWith('3'), a2: idStartingWith('1'), a3: idStartingWith('2'), b1: idStartingWith('4'), b2: idStartingWith('0') };
    let queueId: string;
    let timeA: string;
    let timeB: string;
    const c1 = callRefOf(projectId, 'c1');
    const c2 = callRefOf(projectId, 'c2');

    /** Two batches, by two users, some milliseconds apart. Ids are chosen so id order ≠ input order. */
    beforeAll(async () => {
      queueId = await createQueue(server, member.api_key, projectId);
      const spec = await createSpec(server, member.api_key, projectId, 'score', { type: 'integer' });
      const a = await create([
        { project_id: projectId, id: id.a1, svc_ref: c1, feedback_type: 'thumbs', payload: { up: true }, creator: 'ann' },
        { project_id: projectId, id: id.a2, svc_ref: c2, feedback_type: 'svc.note.1', payload: { note: 'hi' }, creator: 'bob' },
        {
          project_id: projectId,
          id: id.a3,
          svc_ref: objectRefOf(projectId, 'doc', 'd1'),
          feedback_type: 'svc.annotation.score',
          annotation_ref: spec.ref,
          call_ref: c1,
          payload: { value: 4 },
          queue_id: queueId,
        },
      ]);
      expect(a.status, a.text).toBe(200);
      timeA = a.body.res[0].created_at;
      await sleep(10);
      const b = await create(
        [
          { project_id: projectId, id: id.b1, svc_ref: c2, feedback_type: 'thumbs', payload: { up: false }, creator: 'ann', queue_id: queueId },
          {
            project_id: projectId,
            id: id.b2,
            svc_ref: c2,
            feedback_type: 'svc.runnable.judge',
            runnable_ref: objectRefOf(projectId, 'judge', 'v1', 'op'),
            call_ref: c2,
            payload: { output: 'fine' },
            creator: 'carl',
          },
        ],
        member2.api_key,
      );
      expect(b.status, b.text).toBe(200);
      timeB = b.body.res[0].created_at;
      expect(Date.parse(timeB)).toBeGreaterThan(Date.parse(timeA));
    });

    const idsOf = async (body: Record<string, unknown>) => {
      const records = await stored(projectId, body);
      const names = Object.fromEntries(Object.entries(id).map(([name, value]) => [value, name]));
      return records.map((r) => names[r.id] ?? r.id);
    };

    it('query: default order is created_at, then id, ascending', async () => {
      expect(await idsOf({})).toEqual(['a2', 'a3', 'a1', 'b2', 'b1']);
    });

    it('query: filters on ids, svc_refs, feedback_types, queue_id, call_ref, creator, svc_user_id (combined with AND)', async () => {
      expect(await idsOf({ filter: { ids: [id.a1, id.b2, randomUUID()] } })).toEqual(['a1', 'b2']);
      expect(await idsOf({ filter: { ids: [] } })).toEqual([]);
      expect(await idsOf({ filter: { svc_refs: [c1] } })).toEqual(['a1']);
      expect(await idsOf({ filter: { svc_refs: [c1, objectRefOf(projectId, 'doc', 'd1')] } })).toEqual(['a3', 'a1']);
      expect(await idsOf({ filter: { feedback_types: ['thumbs'] } })).toEqual(['a1', 'b1']);
      expect(await idsOf({ filter: { feedback_types: ['svc.note.1', 'svc.runnable.judge'] } })).toEqual(['a2', 'b2']);
      expect(await idsOf({ filter: { queue_id: queueId } })).toEqual(['a3', 'b1']);
      expect(await idsOf({ filter: { call_ref: c1 } })).toEqual(['a3']);
      expect(await idsOf({ filter: { call_ref: c2 } })).toEqual(['b2']);
      expect(await idsOf({ filter: { creator: 'ann' } })).toEqual(['a1', 'b1']);
      expect(await idsOf({ filter: { svc_user_id: member2.user_id } })).toEqual(['b2', 'b1']);
      expect(await idsOf({ filter: { svc_user_id: member.user_id } })).toEqual(['a2', 'a3', 'a1']);
      expect(await idsOf({ filter: { feedback_types: ['thumbs'], creator: 'ann', svc_user_id: member.user_id } })).toEqual(['a1']);
      expect(await idsOf({ filter: { creator: 'nobody' } })).toEqual([]);
    });

    it('query: created_after (inclusive) and created_before (exclusive)', async () => {
      expect(await idsOf({ filter: { created_after: timeB } })).toEqual(['b2', 'b1']);
      expect(await idsOf({ filter: { created_before: timeB } })).toEqual(['a2', 'a3', 'a1']);
      expect(await idsOf({ filter: { created_after: timeA, created_before: timeB } })).toEqual(['a2', 'a3', 'a1']);
      expect(await idsOf({ filter: { created_before: timeA } })).toEqual([]);
      const justAfterB = new Date(Date.parse(timeB) + 1).toISOString();
      expect(await idsOf({ filter: { created_after: justAfterB } })).toEqual([]);
      expect(await idsOf({ filter: { created_before: justAfterB } })).toEqual(['a2', 'a3', 'a1', 'b2', 'b1']);
      // An offset in the timestamp is the same instant.
      const bInPlusTwo = new Date(Date.parse(timeB) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      expect(await idsOf({ filter: { created_after: bInPlusTwo } })).toEqual(['b2', 'b1']);
    });

    it('query: sort_by each field in both directions; id breaks ties ascending', async () => {
      const sort = (field: string, direction: string) => idsOf({ sort_by: [{ field, direction }] });
      expect(await sort('created_at', 'asc')).toEqual(['a2', 'a3', 'a1', 'b2', 'b1']);
      expect(await sort('created_at', 'desc')).toEqual(['b2', 'b1', 'a2', 'a3', 'a1']);
      // svc.annotation.score < svc.note.1 < svc.runnable.judge < thumbs (a1, b1)
      expect(await sort('feedback_type', 'asc')).toEqual(['a3', 'a2', 'b2', 'a1', 'b1']);
      expect(await sort('feedback_type', 'desc')).toEqual(['a1', 'b1', 'b2', 'a2', 'a3']);
      // ann (a1, b1) < bob < carl; a3 has no creator.
      const asc = await sort('creator', 'asc');
      const desc = await sort('creator', 'desc');
      expect(asc.filter((name) => name !== 'a3')).toEqual(['a1', 'b1', 'a2', 'b2']);
      expect(desc.filter((name) => name !== 'a3')).toEqual(['b2', 'a2', 'a1', 'b1']);
      // Several keys: feedback_type desc, then created_at desc.
      expect(await idsOf({ sort_by: [{ field: 'feedback_type', direction: 'desc' }, { field: 'created_at', direction: 'desc' }] })).toEqual([
        'b1',
        'a1',
        'b2',
        'a2',
        'a3',
      ]);
    });

    it('query: a record without creator sorts last by creator ascending and first descending, on every backend', async () => {
      const sort = (direction: string) => idsOf({ sort_by: [{ field: 'creator', direction }] });
      expect(await sort('asc')).toEqual(['a1', 'b1', 'a2', 'b2', 'a3']);
      expect(await sort('desc')).toEqual(['a3', 'b2', 'a2', 'a1', 'b1']);
    });

    it('query: limit and offset page through the order; limit above 10,000 or below 1 is a 400', async () => {
      expect(await idsOf({ limit: 2 })).toEqual(['a2', 'a3']);
      expect(await idsOf({ limit: 2, offset: 2 })).toEqual(['a1', 'b2']);
      expect(await idsOf({ limit: 2, offset: 4 })).toEqual(['b1']);
      expect(await idsOf({ offset: 5 })).toEqual([]);
      expect(await idsOf({ limit: 10_000 })).toHaveLength(5);
      for (const body of [{ limit: 10_001 }, { limit: 0 }, { limit: -1 }, { offset: -1 }, { limit: 1.5 }, { limit: '10' }]) {
        const reply = await rest(server, 'POST', '/feedback/query', { key: member.api_key, body: { project_id: projectId, ...body } });
        expect(reply.status, JSON.stringify(body)).toBe(400);
        expect(reply.body.reason).toMatch(Object.keys(body)[0]!);
      }
    });

    it('query: through the typed tRPC client', async () => {
      const { result } = await client(server, member2.api_key).feedback.query.query({ project_id: projectId, filter: { creator: 'ann' } });
      expect(result.map((r) => r.id)).toEqual([id.a1, id.b1]);
      expect(result[1]).toMatchObject({ svc_user_id: member2.user_id, queue_id: queueId, payload: { up: false }, created_at: timeB });
    });
  }

  it('query: limit defaults to 100', async () => {
    const projectId = 'acme/default-limit';
    const reply = await create(Array.from({ length: 105 }, (_, i) => freeForm(projectId, { payload: { i } })));
    expect(reply.status, reply.text).toBe(200);
    expect(await stored(projectId)).toHaveLength(100);
    expect(await stored(projectId, { offset: 100 })).toHaveLength(5);
  });

  it('creates through the typed tRPC client as through REST', async () => {
    const projectId = 'acme/trpc';
    const trpc = client(server, member.api_key);
    const element = { project_id: projectId, id: randomUUID(), svc_ref: callRefOf(projectId, 'c'), feedback_type: 'svc.reaction.1', payload: { emoji: '👍' } };
    const { res } = await trpc.feedback.batchCreate.mutate({ batch: [element] });
    expect(res).toEqual([
      { id: element.id, created_at: expect.stringMatching(TIMESTAMP), svc_user_id: member.user_id, payload: { emoji: '👍', alias: ':thumbs_up:', detoned: '👍', detoned_alias: ':thumbs_up:' } },
    ]);
    const { result } = await trpc.feedback.query.query({ project_id: projectId });
    expect(result).toEqual([expect.objectContaining({ id: element.id, payload: res[0]!.payload, created_at: res[0]!.created_at })]);
    // A rule broken through the typed door: 400 naming batch[1], nothing stored.
    const bad = { ...element, id: randomUUID(), payload: { emoji: '👍👍' } };
    const good = { ...element, id: randomUUID() };
    await expect(trpc.feedback.batchCreate.mutate({ batch: [good, bad] })).rejects.toMatchObject({
      message: expect.stringContaining('batch[1].payload.emoji'),
      data: { httpStatus: 400 },
    });
    expect((await trpc.feedback.query.query({ project_id: projectId })).result).toHaveLength(1);
  });

  it('purge deletes only the named ids of that project and answers deleted_count', async () => {
    const p1 = 'acme/purge-1';
    const p2 = 'acme/purge-2';
    const shared = randomUUID();
    const keep = freeForm(p1);
    const gone = freeForm(p1);
    for (const batch of [[keep, gone, freeForm(p1, { id: shared })], [freeForm(p2, { id: shared })]]) {
      const reply = await create(batch);
      expect(reply.status, reply.text).toBe(200);
    }
    const purge = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/feedback/purge', { key, body });
    // A viewer and an outsider may not purge.
    expect((await purge({ project_id: p1, ids: [shared] }, viewer.api_key)).status).toBe(403);
    expect((await purge({ project_id: p1, ids: [shared] }, outsider.api_key)).status).toBe(403);
    const reply = await purge({ project_id: p1, ids: [shared, gone.id, gone.id, randomUUID()] });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({ deleted_count: 2 });
    expect(ids(await stored(p1))).toEqual([keep.id]);
    expect(ids(await stored(p2))).toEqual([shared]);
    expect((await purge({ project_id: p1, ids: [shared, gone.id] })).body).toEqual({ deleted_count: 0 });
    // ids must be given.
    expect((await purge({ project_id: p1, ids: [] })).status).toBe(400);
    expect((await purge({ project_id: p1 })).status).toBe(400);
    expect(ids(await stored(p1))).toEqual([keep.id]);
    // A purged id may be created again (new created_at).
    const recreated = await create([{ ...gone, payload: { again: true } }]);
    expect(recreated.status, recreated.text).toBe(200);
    expect((await stored(p1, { filter: { ids: [gone.id] } }))[0]?.payload).toEqual({ again: true });
  });

  it('replace removes one record and creates its replacement in one transaction', async () => {
    const projectId = 'acme/replace';
    const old = freeForm(projectId, { feedback_type: 'svc.note.1', payload: { note: 'first try' } });
    expect((await create([old])).status).toBe(200);
    const replace = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/feedback/replace', { key, body });

    const replacement = freeForm(projectId, { feedback_type: 'svc.note.1', payload: { note: 'second try' } });
    const reply = await replace({ ...replacement, feedback_id: old.id });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({ id: replacement.id, created_at: expect.stringMatching(TIMESTAMP), svc_user_id: member.user_id, payload: { note: 'second try' } });
    expect(await stored(projectId)).toEqual([expect.objectContaining({ id: replacement.id, payload: { note: 'second try' } })]);

    // Unknown feedback_id: 404, nothing created.
    const orphan = freeForm(projectId, { payload: { orphan: true } });
    const unknown = await replace({ ...orphan, feedback_id: randomUUID() });
    expect(unknown.status, unknown.text).toBe(404);
    expect(ids(await stored(projectId))).toEqual([replacement.id]);

    // An invalid replacement: 400, the old record stays.
    const invalid = await replace({ ...freeForm(projectId, { feedback_type: 'svc.note.1', payload: { note: '' } }), feedback_id: replacement.id });
    expect(invalid.status, invalid.text).toBe(400);
    expect(invalid.body.reason).toContain('payload.note');
    expect(ids(await stored(projectId))).toEqual([replacement.id]);

    // A replacement whose id exists with other content: 409, and the purge is rolled back.
    const bystander = freeForm(projectId, { payload: { bystander: true } });
    expect((await create([bystander])).status).toBe(200);
    const clash = await replace({ ...bystander, payload: { changed: true }, feedback_id: replacement.id });
    expect(clash.status, clash.text).toBe(409);
    expect(ids(await stored(projectId)).sort()).toEqual([replacement.id, bystander.id].sort());

    // Replacing a record by itself with new content (same id).
    const same = await replace({ ...replacement, payload: { note: 'third try' }, feedback_id: replacement.id });
    expect(same.status, same.text).toBe(200);
    expect((await stored(projectId, { filter: { ids: [replacement.id] } }))[0]?.payload).toEqual({ note: 'third try' });

    // A viewer may not replace; the record stays.
    expect((await replace({ ...freeForm(projectId), feedback_id: bystander.id }, viewer.api_key)).status).toBe(403);
    expect(ids(await stored(projectId)).sort()).toEqual([replacement.id, bystander.id].sort());
  });

  // Two writes that take the same keys in other orders deadlock on PostgreSQL (40P01, a 503).
  it('stores each record once when concurrent batches name the same new ids in opposite orders', async () => {
    const projectId = `acme/feedback-ids-race-${randomUUID().slice(0, 8)}`;
    const batch = Array.from({ length: 3000 }, (_, i) => ({ project_id: projectId, id: randomUUID(), svc_ref: callRefOf(projectId, `c${i}`), feedback_type: 'note', payload: { text: 'look' } }));
    const replies = await Promise.all(Array.from({ length: 8 }, (_, n) => batchCreate(server, member.api_key, n % 2 ? [...batch].reverse() : batch)));
    expect(replies.map((r) => r.status), replies.find((r) => r.status !== 200)?.text).toEqual(Array(8).fill(200));
    expect(await allFeedback(server, member.api_key, projectId)).toHaveLength(3000);
  });

  it('purges under concurrent purges of the same 10,000 ids in opposite orders', async () => {
    const projectId = `acme/purge-race-${randomUUID().slice(0, 8)}`;
    const ids: string[] = [];
    for (let b = 0; b < 10; b++) {
      const reply = await batchCreate(server, member.api_key, Array.from({ length: 1000 }, (_, i) => ({ project_id: projectId, svc_ref: callRefOf(projectId, `c${b}-${i}`), feedback_type: 'note', payload: { text: 'x' } })));
      expect(reply.status, reply.text).toBe(200);
      ids.push(...reply.body.res.map((r: { id: string }) => r.id));
    }
    const replies = await Promise.all(Array.from({ length: 8 }, (_, n) =>
      rest(server, 'POST', '/feedback/purge', { key: member.api_key, body: { project_id: projectId, ids: n % 2 ? [...ids].reverse() : ids } })));
    expect(replies.map((r) => r.status), replies.find((r) => r.status !== 200)?.text).toEqual(Array(8).fill(200));
    expect(replies.reduce((sum, r) => sum + r.body.deleted_count, 0)).toBe(10000);
    expect(await allFeedback(server, member.api_key, projectId)).toEqual([]);
  });
});
