import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { projectQuery, TIMESTAMP, uniqueId, UUID_V7 } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

describeEachBackend('calls', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  const create = (batch: unknown[], key = member.api_key) => rest(server, 'POST', '/calls/batch/create', { key, body: { batch } });
  const query = (body: Record<string, unknown>, key = member.api_key) => rest(server, 'POST', '/calls/query', { key, body });
  const read = (projectId: string, id: string, key = member.api_key) =>
    rest(server, 'GET', `/calls/${encodeURIComponent(id)}${projectQuery(projectId)}`, { key });

  /** Every call stored in a project, through the API. */
  async function storedCalls(projectId: string): Promise<any[]> {
    const reply = await query({ project_id: projectId, limit: 10_000 });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.calls;
  }

  const call = (projectId: string, extra: Record<string, unknown> = {}) => ({
    project_id: projectId,
    op_name: 'chat',
    started_at: '2026-01-02T03:04:05.678Z',
    ...extra,
  });

  it('creates a batch and returns one id per element in input order; server ids are lowercase UUIDv7', async () => {
    const projectId = 'acme/batch';
    const chosen = uniqueId('mine');
    const reply = await create([
      call(projectId, { op_name: 'first' }),
      call(projectId, { id: chosen, op_name: 'second' }),
      call(projectId, { op_name: 'third', trace_id: 'trace-3', ended_at: '2026-01-02T05:04:06+01:00' }),
    ]);
    expect(reply.status, reply.text).toBe(200);
    const ids = reply.body.res.map((r: { id: string }) => r.id);
    expect(reply.body.res).toHaveLength(3);
    expect(ids[1]).toBe(chosen);
    expect(ids[0]).toMatch(UUID_V7);
    expect(ids[2]).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(3);
    // The ids are in input order: each one reads back as the call at that position.
    for (const [index, opName] of ['first', 'second', 'third'].entries()) {
      const got = await read(projectId, ids[index]);
      expect(got.status, got.text).toBe(200);
      expect(got.body.call.op_name).toBe(opName);
    }
    const third = (await read(projectId, ids[2])).body.call;
    expect(third).toEqual({
      project_id: projectId,
      id: ids[2],
      trace_id: 'trace-3',
      parent_id: null,
      op_name: 'third',
      started_at: '2026-01-02T03:04:05.678Z',
      ended_at: '2026-01-02T04:04:06.000Z',
      inputs: null,
      output: null,
      attributes: null,
      exception: null,
      created_at: expect.stringMatching(TIMESTAMP),
      created_by: member.user_id,
    });
    // trace_id defaults to a new UUIDv7.
    expect((await read(projectId, ids[0])).body.call.trace_id).toMatch(UUID_V7);
  });

  it('answers an empty batch with an empty result', async () => {
    const reply = await create([]);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({ res: [] });
  });

  it('is all or nothing: one invalid element is a 400 naming its index, and nothing is stored', async () => {
    const projectId = 'acme/allornothing';
    const cases: { element: Record<string, unknown>; index: number }[] = [
      { element: call(projectId, { started_at: 'yesterday' }), index: 2 },
      { element: { project_id: projectId, started_at: '2026-01-02T03:04:05.678Z' }, index: 2 }, // no op_name
      { element: call(projectId, { colour: 'red' }), index: 2 },
      { element: call('not a project'), index: 2 },
      { element: call(projectId, { id: 'has/slash' }), index: 2 },
    ];
    for (const { element, index } of cases) {
      const good = [call(projectId, { id: uniqueId('ok') }), call(projectId, { id: uniqueId('ok') })];
      const reply = await create([...good, element, call(projectId, { id: uniqueId('ok') })]);
      expect(reply.status, reply.text).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
      expect(reply.body.reason).toContain(`batch[${index}]`);
    }
    expect(await storedCalls(projectId)).toEqual([]);
  });

  it('treats a retry with the same ids and content as the same calls, storing nothing new', async () => {
    const projectId = 'acme/retry';
    const batch = [call(projectId, { id: uniqueId('r'), inputs: { q: 'hi' } }), call(projectId, { id: uniqueId('r'), output: [1, 2] })];
    const first = await create(batch);
    expect(first.status, first.text).toBe(200);
    const before = await storedCalls(projectId);
    expect(before).toHaveLength(2);
    const again = await create(batch);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(first.body);
    // Same records, same created_at: nothing was written again.
    expect(await storedCalls(projectId)).toEqual(before);
  });

  it('answers 409 for a known id with different content, and stores nothing of that batch', async () => {
    const projectId = 'acme/conflict';
    const id = uniqueId('c');
    expect((await create([call(projectId, { id, op_name: 'original' })])).status).toBe(200);
    const before = await storedCalls(projectId);
    const fresh = uniqueId('fresh');
    const reply = await create([call(projectId, { id: fresh }), call(projectId, { id, op_name: 'changed' })]);
    expect(reply.status, reply.text).toBe(409);
    expect(reply.body.code).toBe('CONFLICT');
    expect(reply.body.reason).toContain(id);
    expect(await storedCalls(projectId)).toEqual(before);
    expect((await read(projectId, fresh)).status).toBe(404);
    expect((await read(projectId, id)).body.call.op_name).toBe('original');
  });

  it('folds the same id twice in one batch: identical is one record, different is a 400', async () => {
    const projectId = 'acme/twice';
    const id = uniqueId('t');
    const same = await create([call(projectId, { id }), call(projectId, { id })]);
    expect(same.status, same.text).toBe(200);
    expect(same.body).toEqual({ res: [{ id }, { id }] });
    expect((await storedCalls(projectId)).map((c) => c.id)).toEqual([id]);

    const other = uniqueId('t');
    const fresh = uniqueId('fresh');
    const different = await create([call(projectId, { id: fresh }), call(projectId, { id: other, op_name: 'a' }), call(projectId, { id: other, op_name: 'b' })]);
    expect(different.status, different.text).toBe(400);
    expect(different.body.reason).toContain('batch[2]');
    expect((await storedCalls(projectId)).map((c) => c.id)).toEqual([id]);
  });

  it('stores parent_id: a parent need not exist yet, null and absent are a root, and it is part of the content for retries', async () => {
    const projectId = 'acme/parents';
    const [root, child, orphan] = [uniqueId('root'), uniqueId('child'), uniqueId('orphan')];
    // The child arrives before its parent, and the orphan's parent never arrives: no foreign key.
    const batch = [
      call(projectId, { id: child, trace_id: 'tp', parent_id: root, started_at: '2026-04-01T00:00:01.000Z' }),
      call(projectId, { id: orphan, trace_id: 'tp', parent_id: 'never-stored', started_at: '2026-04-01T00:00:02.000Z' }),
    ];
    expect((await create(batch)).status).toBe(200);
    expect((await create([call(projectId, { id: root, trace_id: 'tp', parent_id: null })])).status).toBe(200);
    expect((await read(projectId, child)).body.call.parent_id).toBe(root);
    expect((await read(projectId, root)).body.call.parent_id).toBeNull();
    const listed = await storedCalls(projectId);
    expect(listed.map((c) => [c.id, c.parent_id])).toEqual([[root, null], [child, root], [orphan, 'never-stored']]);

    // The same parent again is a retry; another parent is other content.
    expect((await create(batch)).status).toBe(200);
    const moved = await create([call(projectId, { id: child, trace_id: 'tp', parent_id: orphan, started_at: '2026-04-01T00:00:01.000Z' })]);
    expect(moved.status, moved.text).toBe(409);
    expect(moved.body.reason).toContain(child);
    const dropped = await create([call(projectId, { id: child, trace_id: 'tp', started_at: '2026-04-01T00:00:01.000Z' })]);
    expect(dropped.status, dropped.text).toBe(409);
    expect((await read(projectId, child)).body.call.parent_id).toBe(root);

    for (const parent of ['has/slash', '', 'x'.repeat(129), 7]) {
      const bad = await create([call(projectId, { id: uniqueId('bad'), parent_id: parent })]);
      expect(bad.status, String(parent)).toBe(400);
      expect(bad.body.reason).toMatch(/batch\[0\]\.parent_id/);
    }
  });

  it('reads one call, and answers 404 for an unknown id or another project', async () => {
    const projectId = 'acme/read';
    const [id] = (await create([call(projectId, { id: uniqueId('x'), attributes: { env: 'prod' } })])).body.res.map((r: { id: string }) => r.id);
    const got = await read(projectId, id);
    expect(got.status).toBe(200);
    expect(got.body.call).toMatchObject({ id, project_id: projectId, attributes: { env: 'prod' } });
    // A viewer reads.
    expect((await read(projectId, id, viewer.api_key)).status).toBe(200);
    for (const [project, callId] of [
      [projectId, 'no-such-call'],
      ['acme/other', id],
    ] as const) {
      const missing = await read(project, callId);
      expect(missing.status, missing.text).toBe(404);
      expect(missing.body.code).toBe('NOT_FOUND');
    }
  });

  it('queries by call_ids, op_names and trace_ids, ordered by started_at then id, with limit and offset', async () => {
    const projectId = 'acme/query';
    const specs = [
      { id: 'q-e', op_name: 'embed', trace_id: 't1', started_at: '2026-03-01T00:00:03.000Z' },
      { id: 'q-a', op_name: 'chat', trace_id: 't1', started_at: '2026-03-01T00:00:01.000Z' },
      { id: 'q-c', op_name: 'chat', trace_id: 't2', started_at: '2026-03-01T00:00:02.000Z' },
      { id: 'q-b', op_name: 'chat', trace_id: 't2', started_at: '2026-03-01T00:00:02.000Z' },
      { id: 'q-d', op_name: 'rank', trace_id: 't3', started_at: '2026-03-01T00:00:00.000Z' },
    ];
    expect((await create(specs.map((s) => call(projectId, s)))).status).toBe(200);
    // A call with the same op name in another project is never returned.
    expect((await create([call('acme/query-other', { id: 'q-z', op_name: 'chat', trace_id: 't1' })])).status).toBe(200);

    const ids = async (body: Record<string, unknown>) => {
      const reply = await query({ project_id: projectId, ...body });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.calls.map((c: { id: string }) => c.id);
    };
    expect(await ids({})).toEqual(['q-d', 'q-a', 'q-b', 'q-c', 'q-e']);
    expect(await ids({ filter: { call_ids: ['q-c', 'q-e', 'q-z', 'unknown'] } })).toEqual(['q-c', 'q-e']);
    expect(await ids({ filter: { op_names: ['chat'] } })).toEqual(['q-a', 'q-b', 'q-c']);
    expect(await ids({ filter: { trace_ids: ['t1', 't3'] } })).toEqual(['q-d', 'q-a', 'q-e']);
    expect(await ids({ filter: { op_names: ['chat'], trace_ids: ['t2'] } })).toEqual(['q-b', 'q-c']);
    expect(await ids({ filter: { call_ids: [] } })).toEqual([]);
    expect(await ids({ limit: 2 })).toEqual(['q-d', 'q-a']);
    expect(await ids({ limit: 2, offset: 2 })).toEqual(['q-b', 'q-c']);
    expect(await ids({ offset: 4 })).toEqual(['q-e']);
    expect(await ids({ offset: 5 })).toEqual([]);
    expect(await ids({ limit: 10_000 })).toHaveLength(5);

    for (const bad of [{ limit: 10_001 }, { limit: 0 }, { offset: -1 }, { limit: 1.5 }]) {
      const reply = await query({ project_id: projectId, ...bad });
      expect(reply.status, JSON.stringify(bad)).toBe(400);
      expect(reply.body.code).toBe('BAD_REQUEST');
    }
    expect((await query({ project_id: projectId, limit: 10_001 })).body.reason).toContain('10000');
  });

  it('refuses writes by a viewer or a non-member with 403, storing nothing', async () => {
    const projectId = 'acme/viewer';
    const id = uniqueId('v');
    const byViewer = await create([call(projectId, { id })], viewer.api_key);
    expect(byViewer.status, byViewer.text).toBe(403);
    expect(byViewer.body.code).toBe('FORBIDDEN');
    const outsider = await createUser(server, { entity: 'elsewhere', role: 'member' });
    expect((await create([call(projectId, { id })], outsider.api_key)).status).toBe(403);
    expect((await query({ project_id: projectId }, outsider.api_key)).status).toBe(403);
    expect((await read(projectId, id)).status).toBe(404);
    expect(await storedCalls(projectId)).toEqual([]);
  });

  // Two writes that take the same keys in other orders deadlock on PostgreSQL (40P01, a 503):
  // each waits for the other's uncommitted entry. These send the same keys in opposite orders.
  it('stores each call once when concurrent batches name the same new ids in opposite orders', async () => {
    const projectId = `acme/${uniqueId('calls-race')}`;
    const call = (id: string) => ({ project_id: projectId, id, op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z' });
    expect((await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [call('seed')] } })).status).toBe(200);
    const calls = Array.from({ length: 1000 }, (_, i) => call(`cr${i}`));
    const replies = await Promise.all(Array.from({ length: 8 }, (_, n) =>
      rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: n % 2 ? [...calls].reverse() : calls } })));
    expect(replies.map((r) => r.status), replies.find((r) => r.status !== 200)?.text).toEqual(Array(8).fill(200));
    expect(await storedCalls(projectId)).toHaveLength(1001);
  });

  it('creates the new projects of concurrent batches that name them in opposite orders', async () => {
    const tag = uniqueId('projects-race');
    const projectIds = Array.from({ length: 50 }, (_, i) => `acme/${tag}-${i}`);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, n) =>
      rest(server, 'POST', '/calls/batch/create', {
        key: member.api_key,
        body: { batch: (n % 2 ? [...projectIds].reverse() : projectIds).map((projectId) => ({ project_id: projectId, id: `r${n}`, op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z' })) },
      })));
    expect(replies.map((r) => r.status), replies.find((r) => r.status !== 200)?.text).toEqual(Array(8).fill(200));
  });
});
