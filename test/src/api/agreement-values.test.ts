import { QUEUE_READ_LIMIT } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, callRefOf, createSpec, objectRefOf } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, createCalls, createQueue, createSomeCalls, queryItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Which value counts in the agreement of a queue (contract 5.7): an annotator's most recently
// created record of the spec's type and ref, naming the queue and, in svc_ref or call_ref, the
// item's call; a record whose svc_ref names an item's call counts for that item only; deleted
// items and records of other queues do not count.

describeEachBackend('agreement of a queue: the value that counts', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  let a: CreatedKeyForTest;
  let b: CreatedKeyForTest;
  const projectId = 'acme/agreement-values';
  let queueId: string;
  let spec: { ref: string; name: string };

  beforeAll(async () => {
    server = await startTestServer(backend);
    owner = await createUser(server, { entity: 'acme', role: 'member' });
    a = await createUser(server, { entity: 'acme', role: 'member', username: `a${process.pid}${backend}` });
    b = await createUser(server, { entity: 'acme', role: 'member', username: `b${process.pid}${backend}` });
    spec = await createSpec(server, owner.api_key, projectId, 'grade', { enum: ['x', 'y', 'z'] });
    const callIds = await createCalls(server, owner.api_key, projectId, ['c1', 'c2', 'c3', 'c4', 'c5'].map((id) => ({ id })));
    queueId = await createQueue(server, owner.api_key, projectId, { scorer_refs: [spec.ref] });
    const otherQueueId = await createQueue(server, owner.api_key, projectId, { scorer_refs: [spec.ref] });
    for (const queue of [queueId, otherQueueId]) expect((await addItems(server, owner.api_key, projectId, queue, callIds)).added_count).toBe(5);
    const document = objectRefOf(projectId, 'document', 'abc');

    // Each step is a later batch than the one before it (a later created_at).
    const steps: Array<[CreatedKeyForTest, Record<string, unknown>[]]> = [
      [a, [value('c1', 'x'), value('c3', 'x'), value('c4', 'x'), value('c5', 'x'), value(document, 'y', { call_ref: callRefOf(projectId, 'c2') })]],
      [b, [value('c1', 'x'), value('c2', 'y'), value('c3', 'z'), value('c4', 'y'), value('c5', 'y', { queue_id: otherQueueId })]],
      // A later value for c3 through call_ref replaces the one through svc_ref.
      [a, [value(document, 'z', { call_ref: callRefOf(projectId, 'c3') })]],
      // svc_ref names c1, so this counts for c1 and not for c2, which call_ref names.
      [b, [value('c1', 'z', { call_ref: callRefOf(projectId, 'c2') })]],
    ];
    for (const [annotator, batch] of steps) {
      const reply = await batchCreate(server, annotator.api_key, batch);
      expect(reply.status, reply.text).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const c4 = (await queryItems(server, owner.api_key, projectId, queueId)).find((item) => item.call_id === 'c4')!;
    const deleted = await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/${c4.id}?project_id=${encodeURIComponent(projectId)}`, { key: owner.api_key });
    expect(deleted.status, deleted.text).toBe(200);
  });
  afterAll(() => server?.stop());

  /** An annotation of `target` (a call id, or a ref as it is) in the queue, unless `extra` says otherwise. */
  function value(target: string, grade: string, extra: Record<string, unknown> = {}) {
    const svc_ref = target.startsWith('svc:') ? target : callRefOf(projectId, target);
    return { project_id: projectId, svc_ref, feedback_type: `svc.annotation.${spec.name}`, annotation_ref: spec.ref, queue_id: queueId, payload: { value: grade }, ...extra };
  }

  it('takes each annotator’s latest record per item, by svc_ref or else call_ref, in this queue, on live items', async () => {
    await expectTheValues();
  });

  it('takes the same values when the queue has more items than the agreement reads in one pass (it looks them up by call)', async () => {
    for (let added = 0; added <= QUEUE_READ_LIMIT; added += 10_000) {
      const calls = await createSomeCalls(server, owner.api_key, projectId, 10_000);
      expect((await addItems(server, owner.api_key, projectId, queueId, calls)).added_count).toBe(calls.length);
    }
    await expectTheValues();
  });

  async function expectTheValues() {
    const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: owner.api_key, body: { project_id: projectId } });
    expect(reply.status, reply.text).toBe(200);
    const [result] = reply.body.agreement;
    const [first, second] = [a, b].sort((x, y) => (x.user_id < y.user_id ? -1 : 1)) as [CreatedKeyForTest, CreatedKeyForTest];
    // Live items c1 (a x, b z), c2 (a y, b y), c3 (a z, b z), c5 (a x; b's value is in another queue).
    expect(result).toMatchObject({ name: 'grade', level: 'nominal', annotators: [first.user_id, second.user_id], items_rated: 4, items_pairable: 3, values: 6, reason: null });
    expect(result.pairs).toEqual([{ annotator_a: first.user_id, annotator_b: second.user_id, items: 3, agreement: 2 / 3, kappa: expect.any(Number) }]);
    expect(result.disagreements).toEqual([
      {
        item_id: expect.any(String),
        call_id: 'c1',
        values: [
          { annotator_user_id: first.user_id, value: first === a ? 'x' : 'z' },
          { annotator_user_id: second.user_id, value: second === a ? 'x' : 'z' },
        ],
      },
    ]);
  }
});
