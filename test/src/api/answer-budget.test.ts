import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest, type Reply } from '../harness/http.ts';
import { batchCreate, createSpec, freeForm } from '../harness/feedback.ts';
import { createCalls, createQueue, projectQuery, uniqueId } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Issue 23 point 2: every answer that lists rows holds at most LOUPE_MAX_RESPONSE_BYTES of JSON.
// A page stops before the row that would pass it and says so through next_cursor; a row that
// alone passes it is a 413 naming it; lists without pages are refused whole (413). Here the
// budget is small (256 KiB) so that rows of tens of kilobytes show it; process/hostile-answers
// has the same attacks at full size against the server as npm start runs it.
const BUDGET = 256 * 1024;
/** A string of about `bytes` bytes of JSON. */
const text = (bytes: number) => 'x'.repeat(bytes);

describeEachBackend('answer budget', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_MAX_RESPONSE_BYTES: String(BUDGET) });
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  /**
   * Every page of a query, following next_cursor from the first: each answers 200 within the
   * budget; returns the pages' row lists.
   */
  async function allPages(path: string, body: Record<string, unknown>, rowsOf: (reply: Reply) => any[]): Promise<any[][]> {
    const pages: any[][] = [];
    let cursor: string | null = null;
    do {
      const reply: Reply = await rest(server, 'POST', path, { key: viewer.api_key, body: { ...body, ...(cursor ? { cursor } : {}) } });
      expect(reply.status, reply.text.slice(0, 300)).toBe(200);
      expect(Buffer.byteLength(reply.text)).toBeLessThanOrEqual(BUDGET);
      pages.push(rowsOf(reply));
      cursor = reply.body.next_cursor;
      expect(pages.length).toBeLessThan(20);
    } while (cursor);
    return pages;
  }

  it('calls: a page stops before the call that would pass the budget, and its cursors lead through every call in order', async () => {
    const projectId = `acme/${uniqueId('calls')}`;
    const ids = Array.from({ length: 10 }, (_, i) => `call-${i}`);
    await createCalls(server, member.api_key, projectId, ids.map((id, i) => ({ id, started_at: `2026-01-02T03:04:0${i}.000Z`, inputs: { text: text(60_000) } })));
    const pages = await allPages('/calls/query', { project_id: projectId, limit: 10 }, (reply) => reply.body.calls);
    // 60 KB each: four fit in 256 KiB, a fifth would not.
    expect(pages.map((page) => page.length)).toEqual([4, 4, 2]);
    expect(pages.flat().map((call) => call.id)).toEqual(ids);
    expect(pages.flat().every((call) => call.inputs.text.length === 60_000)).toBe(true);
    // From an offset too: the four after it, and a cursor to the rest.
    const deeper = await rest(server, 'POST', '/calls/query', { key: viewer.api_key, body: { project_id: projectId, limit: 10, offset: 5 } });
    expect(deeper.status, deeper.text.slice(0, 300)).toBe(200);
    expect(deeper.body.calls.map((call: { id: string }) => call.id)).toEqual(ids.slice(5, 9));
    const last = await rest(server, 'POST', '/calls/query', { key: viewer.api_key, body: { project_id: projectId, cursor: deeper.body.next_cursor } });
    expect(last.body.calls.map((call: { id: string }) => call.id)).toEqual(ids.slice(9));
    expect(last.body.next_cursor).toBeNull();
  });

  it('calls: one call larger than the budget is a 413 naming it, through the query and the read, and the calls before it are answered', async () => {
    const projectId = `acme/${uniqueId('calls')}`;
    await createCalls(server, member.api_key, projectId, [
      { id: 'small', started_at: '2026-01-02T03:04:01.000Z', inputs: { text: 'hello' } },
      { id: 'huge', started_at: '2026-01-02T03:04:02.000Z', inputs: { text: text(300_000) } },
    ]);
    const first = await rest(server, 'POST', '/calls/query', { key: viewer.api_key, body: { project_id: projectId, limit: 10 } });
    expect(first.status, first.text).toBe(200);
    expect(first.body.calls.map((call: { id: string }) => call.id)).toEqual(['small']);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const next = await rest(server, 'POST', '/calls/query', { key: viewer.api_key, body: { project_id: projectId, cursor: first.body.next_cursor } });
    expect(next.status, next.text).toBe(413);
    expect(next.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', request_id: expect.any(String) });
    expect(next.body.reason).toContain(`Call "huge" of project ${projectId}`);
    expect(next.body.reason).toContain(String(BUDGET));
    const read = await rest(server, 'GET', `/calls/huge${projectQuery(projectId)}`, { key: viewer.api_key });
    expect(read.status, read.text).toBe(413);
    expect(read.body.reason).toContain('Call "huge"');
    const small = await rest(server, 'GET', `/calls/small${projectQuery(projectId)}`, { key: viewer.api_key });
    expect(small.status, small.text).toBe(200);
    expect(small.body.call.inputs).toEqual({ text: 'hello' });
  });

  it('feedback: pages stop at the budget and lead through every record; a record over the budget alone is a 413 naming it', async () => {
    const projectId = `acme/${uniqueId('feedback')}`;
    const batch = Array.from({ length: 10 }, (_, i) => freeForm(projectId, { feedback_type: 'big', payload: { i, text: text(60_000) } }));
    const stored = await batchCreate(server, member.api_key, batch);
    expect(stored.status, stored.text).toBe(200);
    const pages = await allPages('/feedback/query', { project_id: projectId, limit: 10, sort_by: [{ field: 'created_at', direction: 'asc' }] }, (reply) => reply.body.result);
    expect(pages.map((page) => page.length)).toEqual([4, 4, 2]);
    expect(new Set(pages.flat().map((record) => record.id))).toEqual(new Set(batch.map((element) => element.id)));

    const huge = freeForm(projectId, { feedback_type: 'huge', payload: { text: text(300_000) } });
    expect((await batchCreate(server, member.api_key, [huge])).status).toBe(200);
    const refused = await rest(server, 'POST', '/feedback/query', { key: viewer.api_key, body: { project_id: projectId, filter: { feedback_types: ['huge'] } } });
    expect(refused.status, refused.text).toBe(413);
    expect(refused.body.reason).toContain(`Feedback record "${huge.id}"`);
  });

  it('feedback and calls: JSON of many small objects or arrays weighs what it costs parsed, not its length', async () => {
    const projectId = `acme/${uniqueId('dense')}`;
    // 1,000 empty arrays: 3 KB of text, ~50 KB of budget (as a body of that shape weighs).
    const batch = Array.from({ length: 12 }, (_, i) => freeForm(projectId, { feedback_type: 'dense', payload: { i, a: Array.from({ length: 1000 }, () => []) } }));
    expect((await batchCreate(server, member.api_key, batch)).status).toBe(200);
    const pages = await allPages('/feedback/query', { project_id: projectId, limit: 12, filter: { feedback_types: ['dense'] } }, (reply) => reply.body.result);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(pages.slice(0, -1).every((page) => page.length >= 4 && page.length <= 5)).toBe(true);
    expect(new Set(pages.flat().map((record) => record.id))).toEqual(new Set(batch.map((element) => element.id)));

    // 20,000 empty arrays: 60 KB of text, far past the budget parsed.
    const denser = freeForm(projectId, { feedback_type: 'denser', payload: { a: Array.from({ length: 20_000 }, () => []) } });
    expect((await batchCreate(server, member.api_key, [denser])).status).toBe(200);
    const refused = await rest(server, 'POST', '/feedback/query', { key: viewer.api_key, body: { project_id: projectId, filter: { feedback_types: ['denser'] } } });
    expect(refused.status, refused.text).toBe(413);
    expect(refused.body.reason).toContain(`Feedback record "${denser.id}"`);
    await createCalls(server, member.api_key, projectId, [{ id: 'dense-call', inputs: { a: Array.from({ length: 20_000 }, () => []) } }]);
    const read = await rest(server, 'GET', `/calls/dense-call${projectQuery(projectId)}`, { key: viewer.api_key });
    expect(read.status, read.text).toBe(413);
    expect(read.body.reason).toContain('Call "dense-call"');
    const query = await rest(server, 'POST', '/calls/query', { key: viewer.api_key, body: { project_id: projectId } });
    expect(query.status, query.text).toBe(413);
  });

  it('items: pages stop at the budget, with positions that count on across the short pages', async () => {
    const projectId = `acme/${uniqueId('items')}`;
    const callIds = await createCalls(server, member.api_key, projectId, Array.from({ length: 10 }, (_, i) => ({ id: `c${i}` })));
    const queueId = await createQueue(server, member.api_key, projectId);
    // 60 display fields of 1,000 characters: 60 KB of JSON in every item.
    const added = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, {
      key: member.api_key,
      body: { project_id: projectId, call_ids: callIds, display_fields: Array.from({ length: 60 }, () => text(1000)) },
    });
    expect(added.status, added.text).toBe(200);
    const pages = await allPages(`/annotation_queues/${queueId}/items/query`, { project_id: projectId, limit: 10, include_position: true }, (reply) => reply.body.items);
    expect(pages.map((page) => page.length)).toEqual([4, 4, 2]);
    expect(pages.flat().map((item) => item.position_in_queue)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(new Set(pages.flat().map((item) => item.call_id))).toEqual(new Set(callIds));
  });

  it('queues, specs and projects, listed without pages, are refused whole (413) past the budget and answered when narrowed', async () => {
    const projectId = `acme/${uniqueId('lists')}`;
    // Queues: 70 of ~4.5 KB pass 256 KiB; 40 do not.
    for (let i = 0; i < 70; i++) await createQueue(server, member.api_key, projectId, { description: text(4096) });
    const queues = (limit: number) => rest(server, 'POST', '/annotation_queues/query', { key: viewer.api_key, body: { project_id: projectId, limit } });
    const tooMany = await queues(70);
    expect(tooMany.status, tooMany.text).toBe(413);
    expect(tooMany.body.reason).toContain('smaller limit');
    const fewer = await queues(40);
    expect(fewer.status, fewer.text).toBe(200);
    expect(fewer.body.queues).toHaveLength(40);

    // Specs: 20 of ~15 KB pass the budget; five named ones do not.
    const names = Array.from({ length: 20 }, (_, i) => `field${i}`);
    for (const name of names) await createSpec(server, member.api_key, projectId, name, { type: 'string', description: text(15_000) });
    const specs = (body: Record<string, unknown>) => rest(server, 'POST', '/annotation_specs/query', { key: viewer.api_key, body: { project_id: projectId, ...body } });
    const allSpecs = await specs({});
    expect(allSpecs.status, allSpecs.text).toBe(413);
    expect(allSpecs.body.reason).toContain('names or refs');
    const named = await specs({ names: names.slice(0, 5) });
    expect(named.status, named.text).toBe(200);
    expect(named.body.specs.map((spec: { name: string }) => spec.name).sort()).toEqual(names.slice(0, 5).sort());

    // Projects: ~190 bytes each, so 1,500 of them (made by one call each) pass the budget.
    const entity = uniqueId('many');
    const other = await createUser(server, { entity, role: 'member' });
    const batch = Array.from({ length: 1500 }, (_, i) => ({ project_id: `${entity}/p${i}`, op_name: 'x', started_at: '2026-01-02T03:04:05.000Z' }));
    expect((await rest(server, 'POST', '/calls/batch/create', { key: other.api_key, body: { batch } })).status).toBe(200);
    const projects = await rest(server, 'POST', '/projects/query', { key: other.api_key, body: {} });
    expect(projects.status, projects.text).toBe(413);
    expect(projects.body.code).toBe('PAYLOAD_TOO_LARGE');
  });
});
