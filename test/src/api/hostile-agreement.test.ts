import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest, type Reply } from '../harness/http.ts';
import { addItems, createCalls, createQueue } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Hostile agreement requests (issue 23): a viewer's agreement can neither block the event loop nor
// exhaust the heap. The queue: ITEMS items, 3 annotators, SPECS number specs with a distinct value
// per annotator and item (the ratio level's expected disagreement grows with distinct values),
// and a text spec for the large-value cases.

const ITEMS = 3_000;
const ANNOTATORS = 3;
const SPECS = 4;
/** Records of about 1 MB each (under the 1 MiB payload limit). */
const LARGE = 'x'.repeat(1_000_000);

describeEachBackend('hostile agreement requests', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  const annotators: CreatedKeyForTest[] = [];
  const projectId = 'acme/hostile-agreement';
  let queueId: string;
  let callIds: string[];
  const specs: { ref: string; name: string }[] = [];
  let note: { ref: string; name: string };

  beforeAll(async () => {
    server = await startTestServer(backend);
    owner = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    for (let a = 0; a < ANNOTATORS; a++) annotators.push(await createUser(server, { entity: 'acme', role: 'member' }));
    for (let s = 0; s < SPECS; s++) specs.push(await createSpec(server, owner.api_key, projectId, `measure${s}`, { type: 'number', minimum: 0 }));
    note = await createSpec(server, owner.api_key, projectId, 'note', { type: 'string' });
    callIds = await createCalls(server, owner.api_key, projectId, Array.from({ length: ITEMS }, (_, i) => ({ id: `c${i}` })));
    queueId = await createQueue(server, owner.api_key, projectId, { scorer_refs: [...specs.map((s) => s.ref), note.ref] });
    expect((await addItems(server, owner.api_key, projectId, queueId, callIds)).added_count).toBe(ITEMS);
    // Every annotator gives every item a value of its own: ITEMS × ANNOTATORS distinct values per spec.
    await Promise.all(
      annotators.map(async (annotator, a) => {
        for (let s = 0; s < SPECS; s += 2) {
          const batch = [s, s + 1].flatMap((spec) => callIds.map((callId, i) => annotation(specs[spec]!, callId, i + (a + 1) / 8 + spec)));
          const reply = await batchCreate(server, annotator.api_key, batch);
          expect(reply.status, reply.text).toBe(200);
        }
      }),
    );
  });
  afterAll(() => server?.stop());

  function annotation(spec: { ref: string; name: string }, callId: string, value: unknown) {
    return { project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: `svc.annotation.${spec.name}`, annotation_ref: spec.ref, queue_id: queueId, payload: { value } };
  }

  const agreement = (body: Record<string, unknown>) =>
    rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: viewer.api_key, body: { project_id: projectId, ...body } });

  /** Runs `request` while asking `/health` one request after another; the slowest answer's time. */
  async function healthWhile(request: Promise<Reply>): Promise<{ reply: Reply; worstHealthMs: number; checks: number }> {
    let done = false;
    let worstHealthMs = 0;
    let checks = 0;
    const probing = (async () => {
      while (!done) {
        const started = performance.now();
        const health = await rest(server, 'GET', '/health');
        expect(health.status).toBe(200);
        worstHealthMs = Math.max(worstHealthMs, performance.now() - started);
        checks++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const reply = await request.finally(() => (done = true));
    await probing;
    return { reply, worstHealthMs, checks };
  }

  it('refuses a repeated scorer ref (400 naming it and both positions)', async () => {
    const reply = await agreement({ scorer_refs: Array(64).fill(specs[0]!.ref), levels: { [specs[0]!.ref]: 'ratio' } });
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body).toMatchObject({ code: 'BAD_REQUEST', request_id: expect.any(String) });
    expect(reply.body.reason).toBe(`scorer_refs[1] repeats scorer_refs[0] (${specs[0]!.ref}).`);
  });

  it('/health answers within 1 s throughout the heaviest agreement the API accepts: every scorer of the queue at the ratio level', async () => {
    const levels = Object.fromEntries([...specs, note].map((spec) => [spec.ref, 'ratio']));
    const { reply, worstHealthMs, checks } = await healthWhile(agreement({ levels }));
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.agreement).toHaveLength(SPECS + 1);
    for (const result of reply.body.agreement.slice(0, SPECS)) {
      expect(result).toMatchObject({ level: 'ratio', items_rated: ITEMS, items_pairable: ITEMS, values: ITEMS * ANNOTATORS, reason: null });
      expect(result.alpha).toBeGreaterThan(0.99);
    }
    expect(checks).toBeGreaterThan(0);
    expect(worstHealthMs).toBeLessThan(1_000);
  });

  it('reads only the latest record: 40 superseded records of 1 MB on one item, then short ones that count (one read by id, its payload over 1 KiB)', async () => {
    const [first, second] = annotators as [CreatedKeyForTest, CreatedKeyForTest];
    for (let sent = 0; sent < 40; sent += 20) {
      const reply = await batchCreate(server, first.api_key, Array.from({ length: 20 }, () => annotation(note, callIds[0]!, LARGE)));
      expect(reply.status, reply.text).toBe(200);
    }
    await new Promise((resolve) => setTimeout(resolve, 5)); // a later created_at for the value that counts
    const longer = 'y'.repeat(10_000);
    for (const [annotator, value] of [[first, 'short'], [second, longer]] as const) {
      expect((await batchCreate(server, annotator.api_key, [annotation(note, callIds[0]!, value), annotation(note, callIds[1]!, 'same')])).status).toBe(200);
    }
    const reply = await agreement({ scorer_refs: [note.ref] });
    expect(reply.status, reply.text).toBe(200);
    const [result] = reply.body.agreement;
    expect(result).toMatchObject({ items_rated: 2, items_pairable: 2, values: 4 });
    expect(result.disagreements).toHaveLength(1);
    expect(result.disagreements[0]).toMatchObject({ call_id: callIds[0] });
    expect(result.disagreements[0].values.map((v: { value: unknown }) => v.value).sort()).toEqual(['short', longer]);
  });

  it('refuses a latest value of more than 65,536 characters of JSON (413 naming the item’s call and the annotator)', async () => {
    const third = annotators[2]!;
    expect((await batchCreate(server, third.api_key, [annotation(note, callIds[2]!, LARGE)])).status).toBe(200);
    const reply = await agreement({ scorer_refs: [note.ref] });
    expect(reply.status, reply.text).toBe(413);
    expect(reply.body.code).toBe('PAYLOAD_TOO_LARGE');
    expect(reply.body.reason).toContain(`call ${callIds[2]}`);
    expect(reply.body.reason).toContain(third.user_id);
    expect(reply.body.reason).toContain('65,536');
    // The other specs still answer.
    expect((await agreement({ scorer_refs: [specs[0]!.ref] })).status).toBe(200);
  });
});

describeEachBackend('agreement past its time limit', (backend) => {
  let server: TestServer;
  let viewer: CreatedKeyForTest;
  const projectId = 'acme/agreement-time-limit';
  let queueId: string;

  beforeAll(async () => {
    // A limit that no request meets: reading and comparing 2,000 values takes longer.
    server = await startTestServer(backend, { LOUPE_AGREEMENT_TIMEOUT_MS: '1' });
    const owner = await createUser(server, { entity: 'acme', role: 'member' });
    const other = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    const spec = await createSpec(server, owner.api_key, projectId, 'grade', { enum: ['x', 'y'] });
    const callIds = await createCalls(server, owner.api_key, projectId, Array.from({ length: 1_000 }, (_, i) => ({ id: `c${i}` })));
    queueId = await createQueue(server, owner.api_key, projectId, { scorer_refs: [spec.ref] });
    await addItems(server, owner.api_key, projectId, queueId, callIds);
    for (const [a, annotator] of [owner, other].entries()) {
      const batch = callIds.map((callId, i) => ({
        project_id: projectId,
        svc_ref: callRefOf(projectId, callId),
        feedback_type: 'svc.annotation.grade',
        annotation_ref: spec.ref,
        queue_id: queueId,
        payload: { value: (i + a) % 3 ? 'x' : 'y' },
      }));
      expect((await batchCreate(server, annotator.api_key, batch)).status).toBe(200);
    }
  });
  afterAll(() => server?.stop());

  it('answers 503 with Retry-After and a reason naming the limit, and the server goes on answering', async () => {
    const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: viewer.api_key, body: { project_id: projectId } });
    expect(reply.status, reply.text).toBe(503);
    expect(reply.headers.get('retry-after')).toEqual(expect.any(String));
    expect(reply.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', request_id: expect.any(String) });
    expect(reply.body.reason).toBe(
      'The agreement took longer than its limit of 1 ms and was stopped; ask for fewer scorer_refs, or retry when the server is less busy.',
    );
    expect((await rest(server, 'GET', '/health')).status).toBe(200);
    expect((await rest(server, 'POST', '/annotation_queues/stats', { key: viewer.api_key, body: { project_id: projectId, queue_ids: [queueId] } })).status).toBe(200);
  });
});
