import { sql, sqlRows, unitOfWork } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { callRefOf } from '../harness/feedback.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { recordEvents } from '../harness/queue-events.ts';
import { addItems, createCalls, createQueue, projectQuery, queryItems, TIMESTAMP, UUID_V7, uniqueId } from '../harness/queues.ts';
import {
  backfillSettled,
  createRule,
  deleteRule,
  postRule,
  preview,
  queryRules,
  readRule,
  referenceSampled,
  rulesPath,
  updateRule,
  type Rule,
} from '../harness/rules.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Queue rules (contract 5.10) through REST and /trpc: CRUD and its refusals, calls added by a
// "call" rule in the transaction of calls/batch/create, by a "feedback" rule in the feedback's,
// deterministic sampling, never re-adding a call whose item was deleted, the daily cap, preview,
// stats and backfill, on each database.

const PER_QUEUE = 4;
const PER_PROJECT = 6;
const SCAN_LIMIT = 50;

describeEachBackend('queue rules', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;

  beforeAll(async () => {
    server = await startTestServer(backend, {
      LOUPE_MAX_RULES_PER_QUEUE: String(PER_QUEUE),
      LOUPE_MAX_RULES_PER_PROJECT: String(PER_PROJECT),
      LOUPE_RULE_PREVIEW_SCAN_LIMIT: String(SCAN_LIMIT),
      LOUPE_RULE_BACKFILL_POLL_MS: '100',
      LOUPE_RULE_BACKFILL_CHUNK: '10',
      LOUPE_RULE_BACKFILL_PAUSE_MS: '0',
    });
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    outsider = await createUser(server, { entity: 'other', role: 'member' });
  });
  afterAll(async () => {
    const faults = server?.logs.filter((l) => (l.level as number) >= 50) ?? [];
    if (faults.length) console.error('server faults:', JSON.stringify(faults.slice(0, 3), null, 1));
    await server?.stop();
  });

  /** Rows of the server's database, for what is stored. */
  const stored = <T>(statement: ReturnType<typeof sql>) => sqlRows<T>(unitOfWork(server.server.services.orm), statement);
  const itemsOf = async (projectId: string, queueId: string) => queryItems(server, member.api_key, projectId, queueId, { limit: 10_000 });
  const callIdsOf = async (projectId: string, queueId: string) => (await itemsOf(projectId, queueId)).map((item) => item.call_id).sort();

  it('creates, lists, changes and deletes rules; members write, viewers read, others are refused', async () => {
    const projectId = `acme/${uniqueId('crud')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const filter = { op_names: ['chat'], attributes: [{ path: 'gen_ai.request.model', op: 'eq', value: 'gpt-4o' }] };
    const rule = await createRule(server, member.api_key, projectId, queueId, { name: 'gpt-4o chats', filter, sample_rate: 0.5, max_items_per_day: 10 });
    expect(rule).toEqual({
      id: expect.stringMatching(UUID_V7),
      queue_id: queueId,
      name: 'gpt-4o chats',
      trigger: 'call',
      filter,
      sample_rate: 0.5,
      max_items_per_day: 10,
      enabled: true,
      created_by: member.user_id,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: rule.created_at,
      stats: { considered: 0, matched: 0, sampled_out: 0, capped: 0, added: 0, last_added_at: null },
      backfill: null,
    });
    const feedbackRule = await createRule(server, member.api_key, projectId, queueId, {
      name: 'thumbs down',
      trigger: 'feedback',
      filter: { feedback_types: ['svc.reaction.1'], payload: [{ path: 'detoned_alias', op: 'eq', value: ':thumbs_down:' }], call: { has_exception: false } },
    });
    expect(feedbackRule).toMatchObject({ trigger: 'feedback', sample_rate: 1, max_items_per_day: null, enabled: true });

    // Viewers read (REST and /trpc); the typed door answers the same rules.
    expect((await queryRules(server, viewer.api_key, projectId, queueId)).map((r) => r.id)).toEqual([rule.id, feedbackRule.id]);
    const typed = await client(server, viewer.api_key).annotationQueues.rules.query.query({ project_id: projectId, queue_id: queueId });
    expect(typed.rules).toEqual(await queryRules(server, member.api_key, projectId, queueId));

    const changed = await updateRule(server, member.api_key, projectId, queueId, rule.id, { name: 'renamed', enabled: false, max_items_per_day: null });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.rule).toMatchObject({ id: rule.id, name: 'renamed', enabled: false, max_items_per_day: null, sample_rate: 0.5, filter });
    expect(Date.parse(changed.body.rule.updated_at)).toBeGreaterThanOrEqual(Date.parse(rule.updated_at));
    const typedChange = await client(server, member.api_key).annotationQueues.rules.update.mutate({
      project_id: projectId, queue_id: queueId, rule_id: rule.id, enabled: true, filter: { op_names: ['chat'] },
    });
    expect(typedChange.rule).toMatchObject({ enabled: true, filter: { op_names: ['chat'] } });

    // Viewers and strangers write nothing.
    expect((await postRule(server, viewer.api_key, projectId, queueId, {})).status).toBe(403);
    expect((await updateRule(server, viewer.api_key, projectId, queueId, rule.id, { name: 'x' })).status).toBe(403);
    expect((await deleteRule(server, viewer.api_key, projectId, queueId, rule.id)).status).toBe(403);
    expect((await rest(server, 'POST', `${rulesPath(queueId)}/query`, { key: outsider.api_key, body: { project_id: projectId } })).status).toBe(403);

    const deleted = await deleteRule(server, member.api_key, projectId, queueId, rule.id);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body.rule).toMatchObject({ id: rule.id, name: 'renamed' });
    expect((await queryRules(server, member.api_key, projectId, queueId)).map((r) => r.id)).toEqual([feedbackRule.id]);
    expect((await deleteRule(server, member.api_key, projectId, queueId, rule.id)).status).toBe(404);
    expect((await updateRule(server, member.api_key, projectId, queueId, rule.id, { name: 'x' })).status).toBe(404);
  });

  it('answers 404 for a rule of another queue or project, and for a queue that does not exist or was deleted', async () => {
    const projectId = `acme/${uniqueId('404')}`;
    const otherProject = `acme/${uniqueId('404-other')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const otherQueue = await createQueue(server, member.api_key, projectId);
    const foreignQueue = await createQueue(server, member.api_key, otherProject);
    const rule = await createRule(server, member.api_key, projectId, queueId, {});
    for (const [project, queue] of [[projectId, otherQueue], [otherProject, foreignQueue], [otherProject, queueId]] as const) {
      const put = await updateRule(server, member.api_key, project, queue, rule.id, { name: 'x' });
      expect(put.status, `${project} ${queue}`).toBe(404);
      expect(put.body.reason).toMatch(/does not exist/);
      expect((await deleteRule(server, member.api_key, project, queue, rule.id)).status).toBe(404);
    }
    expect((await postRule(server, member.api_key, projectId, 'no-such-queue', {})).status).toBe(404);
    expect((await rest(server, 'POST', `${rulesPath('no-such-queue')}/query`, { key: member.api_key, body: { project_id: projectId } })).status).toBe(404);
    expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}${projectQuery(projectId)}`, { key: member.api_key })).status).toBe(200);
    expect((await rest(server, 'POST', `${rulesPath(queueId)}/query`, { key: member.api_key, body: { project_id: projectId } })).status).toBe(404);
    expect((await updateRule(server, member.api_key, projectId, queueId, rule.id, { name: 'x' })).status).toBe(404);
  });

  it('refuses bad rules with a 400 that names what is wrong', async () => {
    const projectId = `acme/${uniqueId('bad')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ trigger: 'span' }, /trigger/],
      [{ name: '' }, /name/],
      [{ name: '   ' }, /name/],
      [{ sample_rate: 0 }, /sample_rate/],
      [{ sample_rate: 1.5 }, /sample_rate/],
      [{ sample_rate: '0.5' }, /sample_rate/],
      [{ max_items_per_day: 0 }, /max_items_per_day/],
      [{ max_items_per_day: 2.5 }, /max_items_per_day/],
      [{ backfill_since: 'yesterday' }, /backfill_since/],
      [{ colour: 'red' }, /colour/],
      [{ filter: { attributes: [{ path: 'a', op: 'like', value: 'x' }] } }, /filter\.attributes\[0\]\.op/],
      [{ filter: { attributes: [{ path: 'a..b', op: 'exists' }] } }, /filter\.attributes\[0\]\.path/],
      [{ filter: { attributes: [{ path: 'a', op: 'gt', value: 'x' }] } }, /filter\.attributes\[0\]\.value.*number/],
      [{ filter: { op_name: 'chat' } }, /op_name/],
      [{ filter: { op_names: [] } }, /filter\.op_names.*never match/],
      [{ filter: { started_after: '2026-02-01T00:00:00Z', started_before: '2026-01-01T00:00:00Z' } }, /filter\.started_before.*never match/],
      [{ filter: { attributes: [{ path: 'a', op: 'exists' }, { path: 'a', op: 'not_exists' }] } }, /filter\.attributes\[1\].*never match/],
      [{ filter: { attributes: [{ path: 'a', op: 'eq', value: 1 }, { path: 'a', op: 'eq', value: 2 }] } }, /filter\.attributes\[1\].*never match/],
      [{ filter: { feedback_types: ['x'] } }, /filter\.feedback_types.*trigger "feedback"/],
      [{ trigger: 'feedback', filter: { op_names: ['chat'] } }, /filter\.op_names.*filter\.call/],
      [{ trigger: 'feedback', filter: { feedback_types: [] } }, /filter\.feedback_types.*never match/],
      [{ trigger: 'feedback', filter: { payload: [{ path: 'emoji', op: 'nope' }] } }, /filter\.payload\[0\]\.op/],
      [{ trigger: 'feedback', filter: { call: { trace_ids: [] } } }, /filter\.call\.trace_ids.*never match/],
      [{ filter: { text: '***' } }, /filter\.text/],
    ];
    for (const [body, reason] of cases) {
      const reply = await postRule(server, member.api_key, projectId, queueId, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.reason, JSON.stringify(body)).toMatch(reason);
    }
    // A change of the filter is checked against the rule's own trigger.
    const rule = await createRule(server, member.api_key, projectId, queueId, {});
    const put = await updateRule(server, member.api_key, projectId, queueId, rule.id, { filter: { feedback_types: ['x'] } });
    expect(put.status).toBe(400);
    expect(put.body.reason).toMatch(/filter\.feedback_types.*trigger "feedback"/);
    for (const body of [{ trigger: 'feedback' }, { sample_rate: 0 }, { enabled: 'yes' }, { filter: { op_names: [] } }]) {
      const reply = await updateRule(server, member.api_key, projectId, queueId, rule.id, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
    }
    expect(await readRule(server, member.api_key, projectId, queueId, rule.id)).toEqual(rule);
    // Preview takes call filters only.
    const bad = await rest(server, 'POST', `${rulesPath(queueId)}/preview`, { key: member.api_key, body: { project_id: projectId, trigger: 'feedback', filter: {} } });
    expect(bad.status).toBe(400);
    expect(bad.body.reason).toMatch(/trigger/);
  });

  it('limits the rules of a queue and of a project', async () => {
    const projectId = `acme/${uniqueId('limits')}`;
    const queueA = await createQueue(server, member.api_key, projectId);
    const queueB = await createQueue(server, member.api_key, projectId);
    const made: Rule[] = [];
    for (let i = 0; i < PER_QUEUE; i++) made.push(await createRule(server, member.api_key, projectId, queueA, { name: `a${i}` }));
    const over = await postRule(server, member.api_key, projectId, queueA, {});
    expect(over.status).toBe(400);
    expect(over.body.reason).toMatch(new RegExp(`already has ${PER_QUEUE} rules.*LOUPE_MAX_RULES_PER_QUEUE`));
    for (let i = 0; i < PER_PROJECT - PER_QUEUE; i++) await createRule(server, member.api_key, projectId, queueB, { name: `b${i}` });
    const overProject = await postRule(server, member.api_key, projectId, queueB, {});
    expect(overProject.status).toBe(400);
    expect(overProject.body.reason).toMatch(new RegExp(`${projectId} already has ${PER_PROJECT} rules.*LOUPE_MAX_RULES_PER_PROJECT`));
    // A deleted rule frees its place.
    expect((await deleteRule(server, member.api_key, projectId, queueA, made[0]!.id)).status).toBe(200);
    await createRule(server, member.api_key, projectId, queueB, { name: 'again' });
  });

  it('adds the matching calls of calls/batch/create in its transaction, with the rule as their origin, and counts them', async () => {
    const projectId = `acme/${uniqueId('call')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const otherQueue = await createQueue(server, member.api_key, projectId);
    const rule = await createRule(server, member.api_key, projectId, queueId, {
      filter: { op_names: ['chat'], attributes: [{ path: 'model', op: 'eq', value: 'gpt-4o' }] },
    });
    const errors = await createRule(server, member.api_key, projectId, otherQueue, { filter: { has_exception: true, text: 'timeout' } });
    const live = recordEvents(client(server, viewer.api_key), { project_id: projectId, queue_id: queueId });
    await live.started;
    try {
      const ids = await createCalls(server, member.api_key, projectId, [
        { id: 'c1', op_name: 'chat', attributes: { model: 'gpt-4o' } },
        { id: 'c2', op_name: 'chat', attributes: { model: 'gpt-4o-mini' } },
        { id: 'c3', op_name: 'embed', attributes: { model: 'gpt-4o' } },
        { id: 'c4', op_name: 'chat', attributes: { model: 'gpt-4o' }, exception: 'Timeout after 30 s', inputs: { q: 'why the timeout?' } },
        { id: 'c5', op_name: 'tool', exception: 'boom', inputs: { q: 'a timeout' } },
      ]);
      expect(ids).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
      // The answer came after the commit: the items are there now, with the calls' fields copied.
      const items = await itemsOf(projectId, queueId);
      expect(items.map((item) => item.call_id).sort()).toEqual(['c1', 'c4']);
      expect(items[0]).toMatchObject({ call_op_name: 'chat', added_by: member.user_id, created_by: member.user_id, annotation_state: 'unstarted', display_fields: [] });
      expect(await callIdsOf(projectId, otherQueue)).toEqual(['c4', 'c5']);
      const origins = await stored<{ call_id: string; rule_id: string }>(sql`select call_id, rule_id from annotation_queue_items where queue_id = ${queueId} order by call_id`);
      expect(origins).toEqual([{ call_id: 'c1', rule_id: rule.id }, { call_id: 'c4', rule_id: rule.id }]);
      await live.next((event) => event.type === 'items_added' && event.queue_id === queueId, 0);
    } finally {
      live.stop();
    }
    const after = await readRule(server, member.api_key, projectId, queueId, rule.id);
    expect(after.stats).toEqual({ considered: 5, matched: 2, sampled_out: 0, capped: 0, added: 2, last_added_at: expect.stringMatching(TIMESTAMP) });
    expect((await readRule(server, member.api_key, projectId, otherQueue, errors.id)).stats).toMatchObject({ considered: 5, matched: 2, added: 2 });

    // A retried batch stores nothing new, and considers nothing again.
    await createCalls(server, member.api_key, projectId, [{ id: 'c1', op_name: 'chat', attributes: { model: 'gpt-4o' } }]);
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats.considered).toBe(5);
    // Calls of another project are not this project's rules' business.
    await createCalls(server, member.api_key, `acme/${uniqueId('elsewhere')}`, [{ id: 'c9', op_name: 'chat', attributes: { model: 'gpt-4o' } }]);
    expect(await callIdsOf(projectId, queueId)).toEqual(['c1', 'c4']);
  });

  it('tells the calls of one batch over two projects, some stored before, apart: each project\'s rules add its own new calls', async () => {
    const [first, second] = [`acme/${uniqueId('two-a')}`, `acme/${uniqueId('two-b')}`];
    const [firstQueue, secondQueue] = [await createQueue(server, member.api_key, first), await createQueue(server, member.api_key, second)];
    // The same text and op name in both projects: only the project tells the rules apart.
    const firstRule = await createRule(server, member.api_key, first, firstQueue, { filter: { text: 'refund' } });
    const secondRule = await createRule(server, member.api_key, second, secondQueue, { filter: { op_names: ['chat'] } });
    await createCalls(server, member.api_key, first, [{ id: 'old', inputs: { q: 'a refund, stored before' } }]);
    const batch = [
      ...[{ id: 'old', inputs: { q: 'a refund, stored before' } }, { id: 'x1', inputs: { q: 'refund please' } }, { id: 'x2', op_name: 'tool', inputs: { q: 'no words' } }].map((call) => ({ ...call, project: first })),
      ...[{ id: 'x1', inputs: { q: 'refund please' } }, { id: 'x3', op_name: 'tool', inputs: { q: 'refund too' } }].map((call) => ({ ...call, project: second })),
    ].map(({ project, ...call }) => ({ op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z', ...call, project_id: project }));
    const reply = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch } });
    expect(reply.status, reply.text).toBe(200);
    expect(await callIdsOf(first, firstQueue)).toEqual(['old', 'x1']);
    expect(await callIdsOf(second, secondQueue)).toEqual(['x1']);
    // The stored call was considered by its first write only.
    expect((await readRule(server, member.api_key, first, firstQueue, firstRule.id)).stats).toMatchObject({ considered: 3, matched: 2, added: 2 });
    expect((await readRule(server, member.api_key, second, secondQueue, secondRule.id)).stats).toMatchObject({ considered: 2, matched: 1, added: 1 });
  });

  it('adds nothing when the write fails, and nothing through a disabled rule, a deleted rule or a deleted queue', async () => {
    const projectId = `acme/${uniqueId('fail')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    await createRule(server, member.api_key, projectId, queueId, {});
    await createCalls(server, member.api_key, projectId, [{ id: 'taken', op_name: 'chat' }]);
    expect(await callIdsOf(projectId, queueId)).toEqual(['taken']);
    // The batch fails on its last element (the id exists with other content): nothing of it is stored, no item exists.
    const failed = await rest(server, 'POST', '/calls/batch/create', {
      key: member.api_key,
      body: { batch: [{ project_id: projectId, id: 'new-1', op_name: 'chat', started_at: '2026-01-01T00:00:00Z' }, { project_id: projectId, id: 'taken', op_name: 'other', started_at: '2026-01-01T00:00:00Z' }] },
    });
    expect(failed.status, failed.text).toBe(409);
    expect(await callIdsOf(projectId, queueId)).toEqual(['taken']);
    expect(await stored(sql`select id from annotation_queue_items where call_id = 'new-1'`)).toEqual([]);

    const disabledQueue = await createQueue(server, member.api_key, projectId);
    const disabled = await createRule(server, member.api_key, projectId, disabledQueue, {});
    expect((await updateRule(server, member.api_key, projectId, disabledQueue, disabled.id, { enabled: false })).status).toBe(200);
    const deletedQueue = await createQueue(server, member.api_key, projectId);
    await createRule(server, member.api_key, projectId, deletedQueue, {});
    expect((await rest(server, 'DELETE', `/annotation_queues/${deletedQueue}${projectQuery(projectId)}`, { key: member.api_key })).status).toBe(200);
    const deletedRuleQueue = await createQueue(server, member.api_key, projectId);
    const deletedRule = await createRule(server, member.api_key, projectId, deletedRuleQueue, {});
    expect((await deleteRule(server, member.api_key, projectId, deletedRuleQueue, deletedRule.id)).status).toBe(200);
    await createCalls(server, member.api_key, projectId, [{ id: 'later', op_name: 'chat' }]);
    expect(await callIdsOf(projectId, queueId)).toEqual(['later', 'taken']);
    expect(await callIdsOf(projectId, disabledQueue)).toEqual([]);
    expect(await callIdsOf(projectId, deletedRuleQueue)).toEqual([]);
    expect(await stored(sql`select id from annotation_queue_items where queue_id = ${deletedQueue}`)).toEqual([]);
    expect((await readRule(server, member.api_key, projectId, disabledQueue, disabled.id)).stats.considered).toBe(0);
  });

  it('samples deterministically: the share is within four standard errors of the rate, and each choice is the hash of (rule, call)', async () => {
    const projectId = `acme/${uniqueId('sample')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const rate = 0.05;
    const rule = await createRule(server, member.api_key, projectId, queueId, { sample_rate: rate });
    const n = 10_000;
    const calls = Array.from({ length: n }, (_, i) => ({ id: `s${i}`, op_name: 'chat', started_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() }));
    await createCalls(server, member.api_key, projectId, calls);
    const added = await callIdsOf(projectId, queueId);
    const standardError = Math.sqrt((rate * (1 - rate)) / n);
    // The rule's id is new each run, so its share is one draw: beyond three standard errors once in
    // 370 runs (CI saw 3.16), beyond four once in 16,000. The exact choice is checked next.
    expect(Math.abs(added.length / n - rate)).toBeLessThan(4 * standardError);
    expect(added).toEqual(calls.map((call) => call.id).filter((id) => referenceSampled(rule.id, id, rate)).sort());
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({
      considered: n, matched: n, sampled_out: n - added.length, capped: 0, added: added.length,
    });
    // The same batch again (a retry) changes nothing; the same calls through a second rule of the
    // same rate in another queue (its backfill) are chosen by that rule's own hash.
    await createCalls(server, member.api_key, projectId, calls);
    expect(await callIdsOf(projectId, queueId)).toEqual(added);
    const otherQueue = await createQueue(server, member.api_key, projectId);
    const second = await createRule(server, member.api_key, projectId, otherQueue, { sample_rate: rate, backfill_since: '2026-01-01T00:00:00Z' });
    server.server.services.ruleBackfills.wake();
    const done = await backfillSettled(server, member.api_key, { projectId, queueId: otherQueue, ruleId: second.id }, 120_000);
    const secondAdded = await callIdsOf(projectId, otherQueue);
    expect(secondAdded).toEqual(calls.map((call) => call.id).filter((id) => referenceSampled(second.id, id, rate)).sort());
    expect(done.backfill).toEqual({ since: '2026-01-01T00:00:00.000Z', state: 'done', considered: n, added: secondAdded.length, reason: null });
    expect(secondAdded).not.toEqual(added);
  }, 180_000);

  it('never adds a call again whose item was deleted (a person still may); a call already in the queue is not added twice', async () => {
    const projectId = `acme/${uniqueId('deleted')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    await createCalls(server, member.api_key, projectId, [{ id: 'd1' }, { id: 'd2' }, { id: 'd3' }]);
    await addItems(server, member.api_key, projectId, queueId, ['d2']);
    const feedbackRule = await createRule(server, member.api_key, projectId, queueId, { trigger: 'feedback', filter: { feedback_types: ['flag'] } });
    const flag = (callId: string) => ({ project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: 'flag', payload: {} });
    expect((await rest(server, 'POST', '/feedback/batch/create', { key: member.api_key, body: { batch: [flag('d1'), flag('d2')] } })).status).toBe(200);
    const items = await itemsOf(projectId, queueId);
    expect(items.map((item) => item.call_id).sort()).toEqual(['d1', 'd2']);
    const d1 = items.find((item) => item.call_id === 'd1')!;
    expect((await rest(server, 'DELETE', `/annotation_queues/${queueId}/items/${d1.id}${projectQuery(projectId)}`, { key: member.api_key })).status).toBe(200);
    // Flagged again: the feedback rule meets d1 again, and leaves it out.
    expect((await rest(server, 'POST', '/feedback/batch/create', { key: member.api_key, body: { batch: [flag('d1'), flag('d3')] } })).status).toBe(200);
    expect(await callIdsOf(projectId, queueId)).toEqual(['d2', 'd3']);
    // A backfill of another rule over the same calls leaves it out too.
    const backfill = await createRule(server, member.api_key, projectId, queueId, { backfill_since: '2000-01-01T00:00:00Z' });
    server.server.services.ruleBackfills.wake();
    const done = await backfillSettled(server, member.api_key, { projectId, queueId, ruleId: backfill.id });
    expect(done.backfill).toMatchObject({ state: 'done', considered: 3, added: 0 });
    expect(done.stats).toMatchObject({ considered: 3, matched: 3, added: 0 });
    expect(await callIdsOf(projectId, queueId)).toEqual(['d2', 'd3']);
    // A person may add it back by hand.
    expect((await addItems(server, member.api_key, projectId, queueId, ['d1'])).added_count).toBe(1);
    expect(await callIdsOf(projectId, queueId)).toEqual(['d1', 'd2', 'd3']);
    expect((await readRule(server, member.api_key, projectId, queueId, feedbackRule.id)).stats).toMatchObject({ considered: 4, matched: 4, added: 2 });
  });

  it('adds the call a matching feedback record names, through batch create, single create and replace, in the feedback\'s transaction', async () => {
    const projectId = `acme/${uniqueId('feedback')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const rule = await createRule(server, member.api_key, projectId, queueId, {
      trigger: 'feedback',
      filter: { feedback_types: ['svc.reaction.1'], payload: [{ path: 'detoned_alias', op: 'eq', value: ':thumbs_down:' }], call: { op_names: ['chat'] } },
    });
    await createCalls(server, member.api_key, projectId, [
      { id: 'f1', op_name: 'chat' }, { id: 'f2', op_name: 'chat' }, { id: 'f3', op_name: 'embed' }, { id: 'f4', op_name: 'chat' }, { id: 'f5', op_name: 'chat' },
    ]);
    const reaction = (callId: string, emoji: string, fields: Record<string, unknown> = {}) => ({
      project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: 'svc.reaction.1', payload: { emoji }, ...fields,
    });
    const batch = await rest(server, 'POST', '/feedback/batch/create', {
      key: member.api_key,
      body: {
        batch: [
          reaction('f1', '👎🏽'), // thumbs down with a skin tone: detoned_alias matches
          reaction('f2', '👍'),
          reaction('f3', '👎'), // not a chat: the call condition fails
          reaction('missing', '👎'), // no such call stored: nothing to add
          { ...reaction('f4', '👎'), svc_ref: `svc:///${projectId}/object/thing:1`, call_ref: callRefOf(projectId, 'f4') },
          { project_id: projectId, svc_ref: callRefOf(projectId, 'f2'), feedback_type: 'note', payload: { emoji: '👎' } },
        ],
      },
    });
    expect(batch.status, batch.text).toBe(200);
    expect(await callIdsOf(projectId, queueId)).toEqual(['f1', 'f4']);
    // A failing batch adds nothing: its second element has an invalid emoji.
    const failed = await rest(server, 'POST', '/feedback/batch/create', { key: member.api_key, body: { batch: [reaction('f5', '👎'), reaction('f5', 'not an emoji')] } });
    expect(failed.status).toBe(400);
    expect(await callIdsOf(projectId, queueId)).toEqual(['f1', 'f4']);
    // Single create, and replace (through the typed door).
    const single = await rest(server, 'POST', '/feedback/create', { key: member.api_key, body: reaction('f2', '👎') });
    expect(single.status, single.text).toBe(200);
    expect(await callIdsOf(projectId, queueId)).toEqual(['f1', 'f2', 'f4']);
    const up = await rest(server, 'POST', '/feedback/create', { key: member.api_key, body: reaction('f5', '👍') });
    expect(await callIdsOf(projectId, queueId)).toEqual(['f1', 'f2', 'f4']);
    await client(server, member.api_key).feedback.replace.mutate({ ...reaction('f5', '👎'), feedback_id: up.body.id } as never);
    expect(await callIdsOf(projectId, queueId)).toEqual(['f1', 'f2', 'f4', 'f5']);
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({ considered: 9, matched: 4, added: 4 });
  });

  it('adds each call once when concurrent feedback batches name the same calls in opposite orders', async () => {
    const projectId = `acme/${uniqueId('feedback-race')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const rule = await createRule(server, member.api_key, projectId, queueId, { trigger: 'feedback', filter: { feedback_types: ['note'] } });
    const callIds = Array.from({ length: 1000 }, (_, i) => `fr${i}`);
    await createCalls(server, member.api_key, projectId, callIds.map((id) => ({ id })));
    const note = (callId: string) => ({ project_id: projectId, svc_ref: callRefOf(projectId, callId), feedback_type: 'note', payload: { text: 'look' } });
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        rest(server, 'POST', '/feedback/batch/create', { key: member.api_key, body: { batch: (n % 2 ? [...callIds].reverse() : callIds).map(note) } }),
      ),
    );
    expect(replies.map((reply) => reply.status)).toEqual(Array(6).fill(200));
    expect(await callIdsOf(projectId, queueId)).toEqual([...callIds].sort());
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({ considered: 6000, matched: 6000, added: 1000 });
  });

  it('evaluates rules whose lists together hold more values than one statement takes', async () => {
    const projectId = `acme/${uniqueId('lists')}`;
    const names = (tag: string) => [...Array.from({ length: 999 }, (_, i) => `${tag}-${i}`), 'chat'];
    const queues: string[] = [];
    for (let r = 0; r < PER_QUEUE; r++) {
      const queueId = await createQueue(server, member.api_key, projectId);
      queues.push(queueId);
      // 3,000 values a rule: 12,000 for the four, more than one statement's share.
      await createRule(server, member.api_key, projectId, queueId, {
        filter: { op_names: names('op'), trace_ids: names('trace'), call_ids: [...Array.from({ length: 999 }, (_, i) => `x${r}-${i}`), `L${r}`] },
      });
    }
    await createCalls(server, member.api_key, projectId, Array.from({ length: PER_QUEUE }, (_, r) => ({ id: `L${r}`, op_name: 'chat', trace_id: 'chat' })));
    for (const [r, queueId] of queues.entries()) expect(await callIdsOf(projectId, queueId)).toEqual([`L${r}`]);
  });

  it('stops at max_items_per_day, counting what it skips', async () => {
    const projectId = `acme/${uniqueId('cap')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const rule = await createRule(server, member.api_key, projectId, queueId, { max_items_per_day: 3 });
    await createCalls(server, member.api_key, projectId, Array.from({ length: 5 }, (_, i) => ({ id: `cap${i}` })));
    expect(await callIdsOf(projectId, queueId)).toEqual(['cap0', 'cap1', 'cap2']);
    await createCalls(server, member.api_key, projectId, [{ id: 'cap5' }]);
    expect(await callIdsOf(projectId, queueId)).toEqual(['cap0', 'cap1', 'cap2']);
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({ considered: 6, matched: 6, capped: 3, added: 3 });
    const day = new Date().toISOString().slice(0, 10);
    expect(await stored(sql`select day, added, capped from queue_rule_days where rule_id = ${rule.id}`)).toEqual([{ day, added: 3, capped: 3 }]);
    // A higher cap lets the next ones in.
    expect((await updateRule(server, member.api_key, projectId, queueId, rule.id, { max_items_per_day: 4 })).status).toBe(200);
    await createCalls(server, member.api_key, projectId, [{ id: 'cap6' }, { id: 'cap7' }]);
    expect(await callIdsOf(projectId, queueId)).toEqual(['cap0', 'cap1', 'cap2', 'cap6']);
  });

  it('keeps the cap under concurrent batches', async () => {
    const projectId = `acme/${uniqueId('cap-race')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const rule = await createRule(server, member.api_key, projectId, queueId, { max_items_per_day: 25 });
    await Promise.all(
      Array.from({ length: 8 }, (_, b) => createCalls(server, member.api_key, projectId, Array.from({ length: 10 }, (_, i) => ({ id: `r${b}-${i}` })))),
    );
    expect(await itemsOf(projectId, queueId)).toHaveLength(25);
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({ considered: 80, matched: 80, added: 25, capped: 55 });
  });

  it('counts concurrent writes of an uncapped rule in the day rows they pick, and a cap set later holds what they added', async () => {
    const projectId = `acme/${uniqueId('shards')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const rule = await createRule(server, member.api_key, projectId, queueId, {});
    await Promise.all(
      Array.from({ length: 8 }, (_, b) => createCalls(server, member.api_key, projectId, Array.from({ length: 10 }, (_, i) => ({ id: `s${b}-${i}` })))),
    );
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({ considered: 80, matched: 80, added: 80, capped: 0 });
    const rows = await stored<{ shard: number | string; added: number | string }>(sql`select shard, added from queue_rule_days where rule_id = ${rule.id}`);
    expect(rows.every((row) => Number(row.shard) >= 1 && Number(row.shard) <= 8)).toBe(true);
    expect(rows.reduce((sum, row) => sum + Number(row.added), 0)).toBe(80);
    // Capped at 85 today: the 80 added in those rows count, 5 more get in.
    expect((await updateRule(server, member.api_key, projectId, queueId, rule.id, { max_items_per_day: 85 })).status).toBe(200);
    await createCalls(server, member.api_key, projectId, Array.from({ length: 10 }, (_, i) => ({ id: `t${i}` })));
    expect(await itemsOf(projectId, queueId)).toHaveLength(85);
    expect((await readRule(server, member.api_key, projectId, queueId, rule.id)).stats).toMatchObject({ considered: 90, matched: 90, added: 85, capped: 5 });
  });

  it('previews a filter over the stored calls within its scan limit; at sample_rate 1 exactly what a backfill then adds', async () => {
    const projectId = `acme/${uniqueId('preview')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 0, minute)).toISOString();
    await createCalls(server, member.api_key, projectId, Array.from({ length: 40 }, (_, i) => ({
      id: `p${String(i).padStart(2, '0')}`, op_name: i % 2 ? 'chat' : 'embed', started_at: at(i), attributes: { tokens: i },
    })));
    await addItems(server, member.api_key, projectId, queueId, ['p01', 'p03']);
    const filter = { op_names: ['chat'], attributes: [{ path: 'tokens', op: 'gte', value: 10 }] };
    expect(await preview(server, viewer.api_key, projectId, queueId, { filter })).toEqual({ matching_calls: 15, would_add: 15, scanned_calls: 40, scan_limit_reached: false });
    expect(await preview(server, member.api_key, projectId, queueId, { filter: { op_names: ['chat'] } })).toMatchObject({ matching_calls: 20, would_add: 18 });
    expect(await preview(server, member.api_key, projectId, queueId, { filter: { op_names: ['chat'] }, sample_rate: 0.5 })).toMatchObject({ matching_calls: 20, would_add: 9 });
    const since = at(30);
    const previewed = await preview(server, member.api_key, projectId, queueId, { filter: { op_names: ['chat'] }, since });
    expect(previewed).toEqual({ matching_calls: 5, would_add: 5, scanned_calls: 10, scan_limit_reached: false });
    // Writes nothing.
    expect(await callIdsOf(projectId, queueId)).toEqual(['p01', 'p03']);
    const rule = await createRule(server, member.api_key, projectId, queueId, { filter: { op_names: ['chat'] }, backfill_since: since });
    server.server.services.ruleBackfills.wake();
    const done = await backfillSettled(server, member.api_key, { projectId, queueId, ruleId: rule.id });
    expect(done.backfill).toMatchObject({ state: 'done', considered: 10, added: previewed.would_add });
    expect((await itemsOf(projectId, queueId)).length).toBe(2 + previewed.would_add);

    // Past the scan limit, the newest calls are counted, and the answer says so. The rule added
    // the new calls as they came: what it would add is only the older chats not in the queue.
    await createCalls(server, member.api_key, projectId, Array.from({ length: 20 }, (_, i) => ({ id: `q${i}`, op_name: 'chat', started_at: at(100 + i) })));
    expect((await itemsOf(projectId, queueId)).length).toBe(2 + previewed.would_add + 20);
    expect(await preview(server, member.api_key, projectId, queueId, { filter: { op_names: ['chat'] } })).toEqual({
      matching_calls: 20 + 15, would_add: 15 - 5, scanned_calls: SCAN_LIMIT, scan_limit_reached: true,
    });
    expect(await preview(server, member.api_key, projectId, queueId, { filter: { started_after: at(100) } })).toMatchObject({ scanned_calls: 20, scan_limit_reached: false });
    const typed = await client(server, viewer.api_key).annotationQueues.rules.preview.query({ project_id: projectId, queue_id: queueId, trigger: 'call', filter: {} });
    expect(typed).toEqual({ matching_calls: SCAN_LIMIT, would_add: expect.any(Number), scanned_calls: SCAN_LIMIT, scan_limit_reached: true });
  });

  it('a PUT of backfill_since starts a new backfill, whose progress is on the rule', async () => {
    const projectId = `acme/${uniqueId('backfill')}`;
    const queueId = await createQueue(server, member.api_key, projectId);
    await createCalls(server, member.api_key, projectId, Array.from({ length: 30 }, (_, i) => ({ id: `b${i}`, started_at: new Date(Date.UTC(2026, 3, 1, 0, i)).toISOString(), attributes: { n: i } })));
    const rule = await createRule(server, member.api_key, projectId, queueId, { filter: { attributes: [{ path: 'n', op: 'lt', value: 20 }] } });
    expect(rule.backfill).toBeNull();
    const put = await updateRule(server, member.api_key, projectId, queueId, rule.id, { backfill_since: '2026-04-01T00:05:00Z' });
    expect(put.status, put.text).toBe(200);
    expect(put.body.rule.backfill).toEqual({ since: '2026-04-01T00:05:00.000Z', state: 'running', considered: 0, added: 0, reason: null });
    const done = await backfillSettled(server, member.api_key, { projectId, queueId, ruleId: rule.id });
    expect(done.backfill).toEqual({ since: '2026-04-01T00:05:00.000Z', state: 'done', considered: 25, added: 15, reason: null });
    expect(await callIdsOf(projectId, queueId)).toHaveLength(15);
    const cleared = await updateRule(server, member.api_key, projectId, queueId, rule.id, { backfill_since: null });
    expect(cleared.body.rule.backfill).toBeNull();
  });
});
