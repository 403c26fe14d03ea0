import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUserViaCli, startChildServer, type ChildServer } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import type { FuzzRequest } from './requests.ts';
import { send, type Answer } from './send.ts';

// Minimal reproductions of what the fuzz found, each against the server as `npm start` runs it;
// each failed before its fix and keeps it fixed.

describeEachBackend('fuzz findings', (backend) => {
  let database: TestDatabase;
  let server: ChildServer;
  let key: string;
  beforeAll(async () => {
    database = await freshDatabase(backend);
    ({ api_key: key } = await createUserViaCli(database.url, { entity: 'fza', role: 'member' }));
    server = await startChildServer({ databaseUrl: database.url, env: { LOUPE_LOG_LEVEL: 'warn' } });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  const call = async (method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> => {
    const request: FuzzRequest = { caller: 'member', operation: '', shape: '', method, path, headers, body: body === undefined ? undefined : Buffer.from(body), chunked: false };
    const outcome = await send(new URL(server.url), request, request.body, 10_000);
    if (outcome.kind !== 'answer') throw new Error(`${method} ${path}: no answer (${outcome.error})`);
    return outcome;
  };

  it('a POST with Content-Length: 0 is read as an empty body, not a 500 (the budget refused a weight of 0)', async () => {
    const reply = await call('POST', '/calls/query', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, '');
    expect(reply.status, reply.text).toBe(400);
    expect(JSON.parse(reply.text)).toMatchObject({ code: 'BAD_REQUEST', reason: expect.stringContaining('project_id') });
  });

  it('a request with a body does not stall the server after its answer (the body budget releases in O(budget))', async () => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const lags: number[] = [];
    for (let i = 0; i < 3; i++) {
      expect((await call('POST', '/calls/query', headers, '{"project_id":"fza/x"}')).status).toBe(200);
      lags.push(Math.round((await call('GET', '/health', {})).ms));
    }
    // /health does no work: what it waits for is the event loop, busy with the last request's release.
    expect(Math.max(...lags), `GET /health right after each body request took ${lags.join(', ')} ms`).toBeLessThan(200);
  });

  it('a /trpc batch mixing queries and mutations is a JSON error with reason, code and request_id', async () => {
    const reply = await call('GET', '/trpc/annotationQueues.create,annotationSpecs.query?batch=1&input=%7B%7D', { authorization: `Bearer ${key}` });
    expect(reply.status).toBe(400);
    expect(reply.headers['content-type'], reply.text).toMatch(/^application\/json/);
    const body = JSON.parse(reply.text) as { error?: { reason?: unknown; request_id?: unknown } };
    expect(body.error).toMatchObject({ reason: expect.any(String), request_id: expect.any(String) });
  });

  it('TRACE on the typed door is a 4xx JSON error, not a 500', async () => {
    for (const [path, headers] of [['/trpc/me.read', { authorization: `Bearer ${key}` }], ['/trpc/models.list', {}], ['/trpc', {}]] as const) {
      const reply = await call('TRACE', path, headers);
      expect(reply.status, `TRACE ${path}: ${reply.text}`).toBeLessThan(500);
      expect(reply.headers['content-type'], `TRACE ${path}`).toMatch(/^application\/json/);
    }
  });

  it('OPTIONS, DELETE, PROPFIND and a multipart GET on the typed door are JSON errors with a request_id', async () => {
    for (const [method, type] of [['OPTIONS'], ['DELETE'], ['PROPFIND'], ['GET', 'multipart/form-data; boundary=x']]) {
      const reply = await call(method!, '/trpc/me.read', { authorization: `Bearer ${key}`, ...(type ? { 'content-type': type } : {}) });
      expect(reply.status, `${method}: ${reply.text}`).toBeGreaterThanOrEqual(400);
      expect(reply.headers['content-type'], `${method}: ${reply.text}`).toMatch(/^application\/json/);
      expect((JSON.parse(reply.text) as { error?: { request_id?: unknown } }).error?.request_id, method).toEqual(expect.any(String));
    }
  });

  it('a REST body that is a JSON string or array is a short 400, not one issue per character or element', async () => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    for (const body of [JSON.stringify('x'.repeat(20_000)), JSON.stringify(Array.from({ length: 20_000 }, () => 1))]) {
      const reply = await call('POST', '/calls/query', headers, body);
      expect(reply.status).toBe(400);
      expect(reply.text.length, `a ${body.length}-byte ${body[0] === '"' ? 'string' : 'array'} body answered with ${reply.text.length} bytes`).toBeLessThan(16 * 1024);
    }
  });
});
