import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, createCalls, createQueue, queryItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers
// rate twelve units on a 1–5 scale with missing values (null). Published results: alpha 0.743
// nominal, 0.815 ordinal, 0.849 interval. Reproduced here through the API: a queue of twelve calls,
// four annotators, one spec per level, every value sent as feedback naming the queue.
const RELIABILITY_DATA: (number | null)[][] = [
  [1, 2, 3, 3, 2, 1, 4, 1, 2, null, null, null],
  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, null, 3],
  [null, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, null],
  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, null],
];

describeEachBackend('agreement of a queue', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  const annotators: CreatedKeyForTest[] = [];
  const projectId = 'acme/agreement';
  let queueId: string;
  const specs: Record<string, { ref: string; name: string }> = {};

  beforeAll(async () => {
    server = await startTestServer(backend);
    owner = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    for (let i = 0; i < 4; i++) annotators.push(await createUser(server, { entity: 'acme', role: 'member' }));
    specs.nominal = await createSpec(server, owner.api_key, projectId, 'label', { enum: [1, 2, 3, 4, 5] });
    specs.ordinal = await createSpec(server, owner.api_key, projectId, 'rank', { type: 'integer', minimum: 1, maximum: 5 });
    specs.interval = await createSpec(server, owner.api_key, projectId, 'measure', { type: 'number' });
    const callIds = await createCalls(server, owner.api_key, projectId, RELIABILITY_DATA[0]!.map((_, unit) => ({ id: `unit-${unit + 1}` })));
    queueId = await createQueue(server, owner.api_key, projectId, { scorer_refs: [specs.nominal.ref, specs.ordinal.ref, specs.interval.ref] });
    expect((await addItems(server, owner.api_key, projectId, queueId, callIds)).added_count).toBe(12);

    for (const [observer, ratings] of RELIABILITY_DATA.entries()) {
      const batch = ratings.flatMap((value, unit) =>
        value === null ? [] : Object.values(specs).map((spec) => annotation(spec, `unit-${unit + 1}`, value)),
      );
      // A value given earlier and then changed: only the latest one counts.
      if (observer === 3) {
        expect((await batchCreate(server, annotators[3]!.api_key, [annotation(specs.nominal!, 'unit-1', 5)])).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 5)); // a later created_at for the value that replaces it
      }
      const reply = await batchCreate(server, annotators[observer]!.api_key, batch);
      expect(reply.status, reply.text).toBe(200);
    }
  });
  afterAll(() => server?.stop());

  function annotation(spec: { ref: string; name: string }, callId: string, value: number) {
    return { project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: `svc.annotation.${spec.name}`, annotation_ref: spec.ref, queue_id: queueId, payload: { value } };
  }

  it("gives Krippendorff's published alpha at the nominal, ordinal and interval levels", async () => {
    const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: owner.api_key, body: { project_id: projectId } });
    expect(reply.status, reply.text).toBe(200);
    const [nominal, ordinal, interval] = reply.body.agreement;
    expect(reply.body.agreement.map((a: { name: string; level: string }) => [a.name, a.level])).toEqual([
      ['label', 'nominal'],
      ['rank', 'ordinal'],
      ['measure', 'interval'],
    ]);
    expect(nominal.alpha).toBeCloseTo(0.743, 3);
    expect(ordinal.alpha).toBeCloseTo(0.815, 3);
    expect(interval.alpha).toBeCloseTo(0.849, 3);
    for (const result of [nominal, ordinal, interval]) {
      expect(result).toMatchObject({ items_rated: 12, items_pairable: 11, values: 40, reason: null });
      expect(result.observed_agreement).toBeCloseTo(0.8, 12);
      expect(result.annotators).toEqual(annotators.map((a) => a.user_id).sort());
      expect(result.pairs).toHaveLength(6);
    }
    // Unit 6 (1, 2, 3, 4) disagrees most at every level.
    expect(nominal.disagreements[0].call_id).toBe('unit-6');
  });

  it('takes a level per scorer ref, and is the same through the typed door and for a viewer', async () => {
    const body = { project_id: projectId, scorer_refs: [specs.nominal!.ref], levels: { [specs.nominal!.ref]: 'ratio' as const } };
    const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: viewer.api_key, body });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.agreement).toHaveLength(1);
    expect(reply.body.agreement[0]).toMatchObject({ level: 'ratio' });
    expect(reply.body.agreement[0].alpha).toBeCloseTo(0.797, 3);
    const typed = await client(server, viewer.api_key).annotationQueues.agreement.query({ ...body, queue_id: queueId });
    expect(typed).toEqual(reply.body);
  });

  it('does not rate free text: no level, no alpha and no kappa, with the reason, unless a level is asked for', async () => {
    const comment = await createSpec(server, owner.api_key, projectId, 'comment', { type: 'string', maxLength: 200 });
    const callIds = await createCalls(server, owner.api_key, projectId, [{ id: 'text-1' }, { id: 'text-2' }]);
    const textQueue = await createQueue(server, owner.api_key, projectId, { scorer_refs: [comment.ref] });
    await addItems(server, owner.api_key, projectId, textQueue, callIds);
    for (const [i, annotator] of annotators.slice(0, 2).entries()) {
      const batch = callIds.map((callId, n) => ({
        project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: 'svc.annotation.comment', annotation_ref: comment.ref, queue_id: textQueue,
        payload: { value: n === 0 ? 'fine' : `said by ${i}` },
      }));
      expect((await batchCreate(server, annotator.api_key, batch)).status).toBe(200);
    }
    const reply = await rest(server, 'POST', `/annotation_queues/${textQueue}/agreement`, { key: viewer.api_key, body: { project_id: projectId } });
    expect(reply.status, reply.text).toBe(200);
    const [text] = reply.body.agreement;
    expect(text).toMatchObject({ name: 'comment', level: null, alpha: null, observed_agreement: null, reason: 'free text has no agreement level', items_pairable: 2 });
    expect(text.pairs.map((pair: { kappa: number | null }) => pair.kappa)).toEqual([null]);
    expect(text.disagreements.map((d: { call_id: string }) => d.call_id)).toEqual(['text-2']);
    const asked = await rest(server, 'POST', `/annotation_queues/${textQueue}/agreement`, { key: viewer.api_key, body: { project_id: projectId, levels: { [comment.ref]: 'nominal' } } });
    expect(asked.body.agreement[0]).toMatchObject({ level: 'nominal', reason: null, observed_agreement: 0.5 });
  });

  it("on a queue with overlap, compares the covered items only, and in an assigned queue the assignees' values only (5.11): the published alphas again", async () => {
    const callIds = await createCalls(server, owner.api_key, projectId, Array.from({ length: 80 }, (_, n) => ({ id: `overlap-${n}` })));
    const scorers = [specs.nominal!.ref, specs.ordinal!.ref, specs.interval!.ref];
    const queue = await createQueue(server, owner.api_key, projectId, { scorer_refs: scorers, annotations_per_item: 4, overlap_coverage: 0.4 });
    await addItems(server, owner.api_key, projectId, queue, callIds);
    const items = await queryItems(server, owner.api_key, projectId, queue, { limit: 80 });
    const covered = items.filter((item) => item.annotations_required === 4).map((item) => item.call_id);
    const single = items.filter((item) => item.annotations_required === 1).map((item) => item.call_id);
    // 80 items at coverage 0.4: 32 covered expected, fewer than 12 about once in 300,000 runs.
    expect(covered.length).toBeGreaterThanOrEqual(12);
    expect(single.length).toBeGreaterThanOrEqual(2);
    const value = (spec: { ref: string; name: string }, callId: string, v: number) => ({
      project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: `svc.annotation.${spec.name}`, annotation_ref: spec.ref, queue_id: queue, payload: { value: v },
    });
    const everySpec = (callId: string, v: number) => Object.values(specs).map((spec) => value(spec, callId, v));

    // While the queue is open, someone who will not be an assignee rates the covered items far off.
    const passerby = await createUser(server, { entity: 'acme', role: 'member' });
    expect((await batchCreate(server, passerby.api_key, covered.slice(0, 12).flatMap((callId) => everySpec(callId, 5)))).status).toBe(200);
    const put = await rest(server, 'PUT', `/annotation_queues/${queue}`, {
      key: owner.api_key,
      body: { project_id: projectId, access: 'assigned', assignees: annotators.map((a) => a.user_id) },
    });
    expect(put.status, put.text).toBe(200);
    // The assignees: Krippendorff's data on the first twelve covered items, and disagreement on items needing one annotator.
    for (const [observer, ratings] of RELIABILITY_DATA.entries()) {
      const batch = ratings.flatMap((v, unit) => (v === null ? [] : everySpec(covered[unit]!, v)));
      if (observer < 2) batch.push(...single.slice(0, 2).flatMap((callId) => everySpec(callId, observer === 0 ? 1 : 5)));
      const reply = await batchCreate(server, annotators[observer]!.api_key, batch);
      expect(reply.status, reply.text).toBe(200);
    }

    const reply = await rest(server, 'POST', `/annotation_queues/${queue}/agreement`, { key: viewer.api_key, body: { project_id: projectId } });
    expect(reply.status, reply.text).toBe(200);
    const [nominal, ordinal, interval] = reply.body.agreement;
    expect(nominal.alpha).toBeCloseTo(0.743, 3);
    expect(ordinal.alpha).toBeCloseTo(0.815, 3);
    expect(interval.alpha).toBeCloseTo(0.849, 3);
    for (const result of [nominal, ordinal, interval]) {
      expect(result).toMatchObject({ items_rated: 12, items_pairable: 11, values: 40, reason: null });
      expect(result.annotators).toEqual(annotators.map((a) => a.user_id).sort());
    }
  });

  it('refuses a scorer ref the queue does not have (400) and a queue that does not exist (404)', async () => {
    const foreign = await createSpec(server, owner.api_key, projectId, 'other', { type: 'boolean' });
    const notScorer = await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, {
      key: owner.api_key,
      body: { project_id: projectId, scorer_refs: [foreign.ref] },
    });
    expect(notScorer.status).toBe(400);
    expect(notScorer.body.reason).toContain('scorer_refs[0] is not a scorer');
    const missing = await rest(server, 'POST', '/annotation_queues/no-such-queue/agreement', { key: owner.api_key, body: { project_id: projectId } });
    expect(missing.status).toBe(404);
    const outsider = await createUser(server, { entity: 'other', role: 'member' });
    expect((await rest(server, 'POST', `/annotation_queues/${queueId}/agreement`, { key: outsider.api_key, body: { project_id: projectId } })).status).toBe(403);
  });
});
