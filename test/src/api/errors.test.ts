import { DatabaseSync } from 'node:sqlite';
import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { withClient } from '../harness/databases.ts';
import { client, createUser, rest, type CreatedKeyForTest, type Reply } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

let callCounter = 0;
function newCall(projectId: string, extra: Record<string, unknown> = {}) {
  return { project_id: projectId, id: `call-${process.pid}-${++callCounter}`, op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z', ...extra };
}

/** Every error leaves as the contract's JSON shape, never Express's HTML page. */
function expectJsonError(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
  expect(reply.text.trimStart().startsWith('<')).toBe(false);
  expect(reply.body).toMatchObject({ code, reason: expect.any(String), request_id: reply.headers.get('x-request-id') });
  expect(reply.body.reason.length).toBeGreaterThan(0);
}

describeEachBackend('error responses', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  async function storedIds(projectId: string, ids: string[]): Promise<string[]> {
    const reply = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter: { call_ids: ids } } });
    expect(reply.status).toBe(200);
    return reply.body.calls.map((call: { id: string }) => call.id);
  }

  it('answers malformed JSON with 400 PARSE_ERROR as JSON', async () => {
    for (const raw of ['{"project_id": ', '{project_id: "acme/p"}', "{'a': 1}", 'nul']) {
      const reply = await rest(server, 'POST', '/calls/query', { key: member.api_key, raw, headers: { 'content-type': 'application/json' } });
      expectJsonError(reply, 400, 'PARSE_ERROR');
    }
  });

  it('parses a body sent as application/json; charset=utf-8', async () => {
    const call = newCall('acme/charset');
    const headers = { 'content-type': 'application/json; charset=utf-8' };
    const created = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, headers, raw: JSON.stringify({ batch: [call] }) });
    expect(created.status, created.text).toBe(200);
    expect(created.body).toEqual({ res: [{ id: call.id }] });
    // A body the server did not parse would miss project_id and be a 400; this one finds the call.
    const queried = await rest(server, 'POST', '/calls/query', { key: member.api_key, headers, raw: JSON.stringify({ project_id: 'acme/charset' }) });
    expect(queried.status, queried.text).toBe(200);
    expect(queried.body.calls.map((c: { id: string }) => c.id)).toEqual([call.id]);
  });

  it('refuses a body that is not JSON with 415', async () => {
    const cases = [
      { type: 'text/plain', raw: JSON.stringify({ project_id: 'acme/p' }) },
      { type: 'application/x-www-form-urlencoded', raw: 'project_id=acme%2Fp' },
      { type: 'application/jsonp', raw: JSON.stringify({ project_id: 'acme/p' }) },
    ];
    for (const { type, raw } of cases) {
      const reply = await rest(server, 'POST', '/calls/query', { key: member.api_key, raw, headers: { 'content-type': type } });
      expectJsonError(reply, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  it('reads the media type case-insensitively, through both doors', async () => {
    const headers = { 'content-type': 'Application/JSON; charset=UTF-8' };
    const restReply = await rest(server, 'POST', '/calls/query', { key: member.api_key, headers, raw: JSON.stringify({ project_id: 'acme/charset' }) });
    expect(restReply.status, restReply.text).toBe(200);
    const trpcReply = await rest(server, 'POST', '/trpc/calls.batchCreate', { key: member.api_key, headers, raw: JSON.stringify({ batch: [] }) });
    expect(trpcReply.status, trpcReply.text).toBe(200);
  });

  it('reads a request without body or Content-Type as an empty JSON body, and refuses a body without one', async () => {
    // Before any procedure runs, the REST adapter used to refuse these with request_id null.
    const empty = await rest(server, 'POST', '/calls/query', { key: member.api_key });
    expectJsonError(empty, 400, 'BAD_REQUEST');
    expect(empty.body.reason).toContain('project_id');
    const emptyTrpc = await rest(server, 'POST', '/trpc/calls.batchCreate', { key: member.api_key });
    expect(emptyTrpc.status).toBe(400);
    expect(emptyTrpc.headers.get('content-type')).toMatch(/^application\/json/);
    expect(emptyTrpc.body.error).toMatchObject({ reason: expect.stringContaining('batch'), request_id: emptyTrpc.headers.get('x-request-id') });

    // A Uint8Array body makes fetch send no Content-Type at all.
    const response = await fetch(`${server.url}/calls/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${member.api_key}` },
      body: new TextEncoder().encode(JSON.stringify({ project_id: 'acme/p' })),
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', request_id: response.headers.get('x-request-id') });
  });

  it('names an unknown body field in the reason and lists issues', async () => {
    const top = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'acme/p', colour: 'red' } });
    expectJsonError(top, 400, 'BAD_REQUEST');
    expect(top.body.reason).toContain('colour');
    expect(top.body.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: [], message: expect.stringContaining('colour') })]));

    const call = newCall('acme/p', { flavour: 'x' });
    const nested = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [call] } });
    expectJsonError(nested, 400, 'BAD_REQUEST');
    expect(nested.body.reason).toContain('flavour');
    expect(nested.body.reason).toContain('batch[0]');
    expect(nested.body.issues).toEqual([expect.objectContaining({ path: ['batch', 0], message: expect.stringContaining('flavour') })]);
    expect(await storedIds('acme/p', [call.id])).toEqual([]);
  });

  it('answers an unknown route, or a known path with another method, with 404 JSON', async () => {
    for (const [method, path] of [['GET', '/nope'], ['POST', '/calls/nope/deeper'], ['DELETE', '/me'], ['POST', '/me'], ['GET', '/calls/batch/create']] as const) {
      const reply = await rest(server, method, path, { key: member.api_key });
      expectJsonError(reply, 404, 'NOT_FOUND');
    }
  });

  it('refuses a viewer writing with 403 and stores nothing', async () => {
    const call = newCall('acme/viewer-write');
    const reply = await rest(server, 'POST', '/calls/batch/create', { key: viewer.api_key, body: { batch: [call] } });
    expectJsonError(reply, 403, 'FORBIDDEN');
    expect(reply.body.reason).toMatch(/viewer/);
    expect(await storedIds('acme/viewer-write', [call.id])).toEqual([]);
    // The same viewer may still read.
    expect((await rest(server, 'POST', '/calls/query', { key: viewer.api_key, body: { project_id: 'acme/viewer-write' } })).status).toBe(200);
  });

  it('refuses a user on a project of an entity it is not a member of with 403', async () => {
    const read = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'other/p' } });
    expectJsonError(read, 403, 'FORBIDDEN');
    const write = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [newCall('other/p')] } });
    expectJsonError(write, 403, 'FORBIDDEN');
  });

  it('checks credentials first, then the body, then project access', async () => {
    const badBody = { batch: [{ project_id: 'other/p', op_name: 'x', started_at: 'yesterday' }] };
    const anonymous = await rest(server, 'POST', '/calls/batch/create', { key: 'lp_not_a_key', body: badBody });
    expectJsonError(anonymous, 401, 'UNAUTHORIZED');
    const noCredentials = await rest(server, 'POST', '/calls/query', { body: { project_id: 'other/p', colour: 1 } });
    expectJsonError(noCredentials, 401, 'UNAUTHORIZED');
    // Not a member of "other", but the body's shape is judged before access.
    const shape = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: badBody });
    expectJsonError(shape, 400, 'BAD_REQUEST');
    const query = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'other/p', colour: 1 } });
    expectJsonError(query, 400, 'BAD_REQUEST');
  });

  it('puts X-Request-Id on every response and echoes a sane one', async () => {
    const replies = [
      await rest(server, 'GET', '/me', { key: member.api_key }),
      await rest(server, 'GET', '/me'),
      await rest(server, 'GET', '/no/such/route'),
      await rest(server, 'GET', '/inference/router/partner/models'),
      await rest(server, 'GET', '/health'),
      await rest(server, 'POST', '/calls/query', { key: member.api_key, raw: '{', headers: { 'content-type': 'application/json' } }),
    ];
    expect(replies.map((r) => r.status)).toEqual([200, 401, 404, 200, 200, 400]);
    const ids = replies.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);

    for (const path of ['/me', '/nope', '/inference/router/partner/models']) {
      const reply = await rest(server, 'GET', path, { headers: { 'x-request-id': 'abc-123' } });
      expect(reply.headers.get('x-request-id'), path).toBe('abc-123');
      if (reply.status >= 400) expect(reply.body.request_id).toBe('abc-123');
    }
  });

  it('reports errors through the tRPC client with the HTTP status and the reason', async () => {
    const call = newCall('acme/trpc');
    const denied = await client(server, viewer.api_key)
      .calls.batchCreate.mutate({ batch: [call] })
      .catch((error: unknown) => error);
    expect(denied).toBeInstanceOf(TRPCClientError);
    expect(denied).toMatchObject({ data: { httpStatus: 403, code: 'FORBIDDEN' }, shape: { reason: expect.stringMatching(/viewer/), code: expect.any(Number) } });
    expect(await storedIds('acme/trpc', [call.id])).toEqual([]);

    const invalid = await client(server, member.api_key)
      .calls.query.query({ project_id: 'acme/trpc', colour: 'red' } as never)
      .catch((error: unknown) => error);
    expect(invalid).toMatchObject({ data: { httpStatus: 400 }, shape: { reason: expect.stringContaining('colour'), issues: expect.any(Array) } });
  });
});

describeEachBackend('limits', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_MAX_BODY_BYTES: '2048', LOUPE_MAX_BATCH: '5' });
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  it('answers a body over LOUPE_MAX_BODY_BYTES with 413 JSON and stores nothing', async () => {
    const call = newCall('acme/big', { inputs: { text: 'x'.repeat(3000) } });
    const reply = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [call] } });
    expectJsonError(reply, 413, 'PAYLOAD_TOO_LARGE');
    const viaTrpc = await rest(server, 'POST', '/trpc/calls.batchCreate', { key: member.api_key, body: { batch: [call] } });
    expect(viaTrpc.status).toBe(413);
    // Just under the limit is fine.
    const small = newCall('acme/big', { inputs: { text: 'x'.repeat(1500) } });
    expect((await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [small] } })).status).toBe(200);
    const stored = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'acme/big' } });
    expect(stored.body.calls.map((c: { id: string }) => c.id)).toEqual([small.id]);
  });

  it('answers more than LOUPE_MAX_BATCH records with 413 even when the elements are invalid', async () => {
    const six = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: Array.from({ length: 6 }, () => ({})) } });
    expectJsonError(six, 413, 'PAYLOAD_TOO_LARGE');
    expect(six.body.reason).toMatch(/6/);
    // At the limit the same elements are judged on their own: 400, not 413.
    const five = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: Array.from({ length: 5 }, () => ({})) } });
    expectJsonError(five, 400, 'BAD_REQUEST');
    const valid = Array.from({ length: 6 }, () => newCall('acme/batch'));
    expect((await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: valid } })).status).toBe(413);
    const stored = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'acme/batch' } });
    expect(stored.body.calls).toEqual([]);
  });
});

describeEachBackend('unexpected faults', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    // A real fault: the calls table disappears under the running server.
    if (backend === 'sqlite') {
      const db = new DatabaseSync(server.database.url.slice('sqlite:'.length));
      try {
        db.exec('drop table calls');
      } finally {
        db.close();
      }
    } else {
      await withClient(server.database.url, (c) => c.query('drop table calls cascade'));
    }
  });
  afterAll(() => server?.stop());

  const leaks = /calls|sql|table|select/i;

  it('answers 500 with a generic reason and no SQL, driver message or stack', async () => {
    const reply = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: 'acme/p' }, headers: { 'x-request-id': 'fault-1' } });
    expectJsonError(reply, 500, 'INTERNAL_SERVER_ERROR');
    expect(reply.body.request_id).toBe('fault-1');
    expect(reply.body.reason).not.toMatch(leaks);
    expect(reply.text).not.toMatch(/no such table|does not exist|relation|sqlite|postgres|stack|\.ts:\d+/i);
    // The server log keeps the cause, under the same request id.
    const logged = server.logs.filter((line) => line.request_id === 'fault-1');
    expect(logged.some((line) => line.level === 50 && JSON.stringify(line.err ?? '').match(/calls/))).toBe(true);
  });

  it('answers the same way through the tRPC client', async () => {
    const error = await client(server, member.api_key)
      .calls.query.query({ project_id: 'acme/p' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    const fault = error as TRPCClientError<never>;
    expect(fault.data).toMatchObject({ httpStatus: 500, code: 'INTERNAL_SERVER_ERROR' });
    expect(fault.data).not.toHaveProperty('stack');
    expect((fault.shape as unknown as { reason: string }).reason).not.toMatch(leaks);
    expect(fault.message).not.toMatch(leaks);
  });
});

describeEachBackend('an answer that breaks its own schema', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let queueId: string;
  const projectId = 'acme/output';
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    const created = await rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: 'q' } });
    expect(created.status, created.text).toBe(200);
    queueId = created.body.id;
    // Stored data the output schema refuses (scorer_refs must be strings), written past the API.
    const sql = 'update annotation_queues set scorer_refs = ? where id = ?';
    if (backend === 'sqlite') {
      const db = new DatabaseSync(server.database.url.slice('sqlite:'.length));
      try {
        db.prepare(sql).run('[1]', queueId);
      } finally {
        db.close();
      }
    } else {
      await withClient(server.database.url, (c) => c.query('update annotation_queues set scorer_refs = $1::jsonb where id = $2', ['[1]', queueId]));
    }
  });
  afterAll(() => server?.stop());

  it('is a fault of the server: 500 with the generic reason and no input-style issues, through both doors', async () => {
    const reply = await rest(server, 'GET', `/annotation_queues/${queueId}?project_id=${projectId}`, { key: member.api_key, headers: { 'x-request-id': 'output-1' } });
    expectJsonError(reply, 500, 'INTERNAL_SERVER_ERROR');
    expect(reply.body).not.toHaveProperty('issues');
    expect(reply.body.reason).toMatch(/unexpected error/i);
    expect(reply.body.reason).not.toMatch(/invalid request|scorer_refs/i);
    const error = await client(server, member.api_key)
      .annotationQueues.read.query({ project_id: projectId, queue_id: queueId })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<never>).data).toMatchObject({ httpStatus: 500, code: 'INTERNAL_SERVER_ERROR' });
    const shape = (error as TRPCClientError<never>).shape as unknown as Record<string, unknown>;
    expect(shape).not.toHaveProperty('issues');
    expect(shape.reason).not.toMatch(/invalid request|scorer_refs/i);
    // The log keeps what was wrong, under the request id.
    await expect
      .poll(() => server.logs.some((line) => line.request_id === 'output-1' && line.level === 50 && JSON.stringify(line.err ?? '').includes('scorer_refs')))
      .toBe(true);
  });
});

describe('request ids that are not sane are replaced', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(() => server?.stop());

  it('does not echo an id with spaces or control characters, or one too long', async () => {
    for (const offered of ['has space', 'x'.repeat(200), 'a"b']) {
      const reply = await rest(server, 'GET', '/health', { headers: { 'x-request-id': offered } });
      expect(reply.headers.get('x-request-id')).not.toBe(offered);
      expect(reply.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
