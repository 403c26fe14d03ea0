import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { basic, createUser, rest, type CreatedKeyForTest, type Reply } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Issue 9 points 1, 4 and 5: what a request costs the server before and while its body is read,
// and the bounds every input has. Each answer is checked for its status, its JSON error shape and
// what was stored afterwards.

function expectError(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.body).toMatchObject({ code, reason: expect.any(String), request_id: reply.headers.get('x-request-id') });
}

/** A raw HTTP/1.1 exchange: the bytes sent as they are; resolves with the whole answer text. */
function rawExchange(url: string, request: string | Buffer, { endAfterMs }: { endAfterMs?: number } = {}): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
    socket.once('error', reject);
    socket.once('close', () => resolve(answer));
    socket.once('connect', () => {
      socket.write(request);
      if (endAfterMs !== undefined) setTimeout(() => socket.end(), endAfterMs);
    });
  });
}

const call = (projectId: string, id: string, extra: Record<string, unknown> = {}) => ({
  project_id: projectId,
  id,
  op_name: 'chat',
  started_at: '2026-01-02T03:04:05.678Z',
  ...extra,
});

describeEachBackend('hostile requests', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  const projectId = 'acme/hostile';

  beforeAll(async () => {
    // A small body budget, so that contention for it can be shown with small bodies.
    server = await startTestServer(backend, { LOUPE_BODY_BUDGET_BYTES: String(1024 * 1024), LOUPE_BODY_WAIT_MS: '300' });
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  const queueNames = async (): Promise<string[]> => {
    const reply = await rest(server, 'POST', '/annotation_queues/query', { key: member.api_key, body: { project_id: projectId, limit: 10_000 } });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.queues.map((q: { name: string }) => q.name);
  };
  const storedCalls = async (ids: string[]): Promise<string[]> => {
    const reply = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter: { call_ids: ids } } });
    expect(reply.status, reply.text).toBe(200);
    return reply.body.calls.map((c: { id: string }) => c.id);
  };

  it('answers an anonymous body with 401 before reading it', async () => {
    // 12 MB of empty objects declared, a few bytes sent: parsed, it would be ~700 MB of heap. The
    // answer comes at once; the rest of a body within the limit would be drained, not read.
    const head = (length: number) => `POST /feedback/batch/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
    const started = performance.now();
    const answer = await rawExchange(server.url, head(12_000_000) + '{"batch":[{},{},', { endAfterMs: 500 });
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toMatch(/\r\nx-request-id: \S+\r\n/i);
    expect(answer).toContain('"code":"UNAUTHORIZED"');
    expect(performance.now() - started).toBeLessThan(2000);
    // A body declared larger than the server would ever read: answered, and the connection closed.
    const huge = await rawExchange(server.url, head(100_000_000) + '{"batch":[');
    expect(huge).toMatch(/^HTTP\/1\.1 401 /);
    expect(huge).toMatch(/\r\nconnection: close\r\n/i);

    const gzipped = gzipSync('{"batch":[' + '{},'.repeat(1_000_000) + '{}]}');
    const reply = await fetch(`${server.url}/feedback/batch/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipped,
    });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toBe('Basic realm="loupe"');
    expect((await rest(server, 'GET', '/health')).status).toBe(200);
  });

  it('refuses compressed bodies (415) and other charsets (415) from members, storing nothing', async () => {
    const body = JSON.stringify({ project_id: projectId, name: 'gzipped' });
    const gz = await fetch(`${server.url}/annotation_queues`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', authorization: basic(member.api_key) },
      body: gzipSync(body),
    });
    expect(gz.status).toBe(415);
    expect(await gz.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', reason: expect.stringContaining('Compressed') });
    const latin1 = await rest(server, 'POST', '/annotation_queues', {
      key: member.api_key,
      headers: { 'content-type': 'application/json; charset=latin1' },
      raw: JSON.stringify({ project_id: projectId, name: 'latin1' }),
    });
    expectError(latin1, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(await queueNames()).not.toEqual(expect.arrayContaining(['gzipped', 'latin1']));
  });

  it('refuses invalid UTF-8 inside a JSON string with 400, storing nothing', async () => {
    const raw = Buffer.concat([Buffer.from(`{"project_id":"${projectId}","name":"q`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    const reply = await fetch(`${server.url}/annotation_queues`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(member.api_key) },
      body: raw,
    });
    expect(reply.status).toBe(400);
    expect(await reply.json()).toMatchObject({ code: 'BAD_REQUEST', reason: 'The request body is not valid UTF-8.' });
    expect((await queueNames()).filter((name) => name.startsWith('q'))).toEqual([]);
  });

  it('bounds nesting: a call output 3,000 levels deep is a 400 about depth, 50 levels are stored', async () => {
    const deep = (levels: number) => JSON.parse('['.repeat(levels) + ']'.repeat(levels));
    const tooDeep = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [call(projectId, 'deep-3000', { output: deep(3000) })] } });
    expectError(tooDeep, 400, 'BAD_REQUEST');
    expect(tooDeep.body.reason).toBe('The request body nests objects and arrays deeper than 64 levels.');
    const fine = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [call(projectId, 'deep-50', { output: deep(50) })] } });
    expect(fine.status, fine.text).toBe(200);
    expect(await storedCalls(['deep-3000', 'deep-50'])).toEqual(['deep-50']);
  });

  it('answers a body that would take more memory than the budget allows with 413, storing nothing', async () => {
    // 200,000 empty objects: 600 KB of text, weighed as ~32 MB of heap against a 1 MiB budget.
    const raw = `{"batch":[${Array(200_000).fill('{}').join(',')}]}`;
    const reply = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, raw, headers: { 'content-type': 'application/json' } });
    expectError(reply, 413, 'PAYLOAD_TOO_LARGE');
    expect(reply.body.reason).toContain('Split it');
  });

  it('answers 503 with Retry-After while the body budget is held by others, then serves the retry', async () => {
    // One member's body is being received slowly and holds the budget (1 MiB) for the bytes it
    // has sent: 190 KB of 200 KB weigh 760 KB. A second body of the same size finds no room
    // within 300 ms.
    const size = 200_000;
    const body = (id: string) => JSON.stringify({ batch: [call(projectId, id, { inputs: { text: 'x'.repeat(size - 200) } })] }).padEnd(size, ' ');
    const slowBody = body('slow-call');
    const slowHead =
      `POST /calls/batch/create HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(member.api_key)}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(slowBody)}\r\nConnection: close\r\n\r\n`;
    const { port } = new URL(server.url);
    const slow = connect(Number(port), '127.0.0.1');
    let slowAnswer = '';
    slow.setEncoding('utf8').on('data', (chunk: string) => (slowAnswer += chunk));
    const slowClosed = new Promise((resolve) => slow.once('close', resolve));
    await new Promise((resolve) => slow.once('connect', resolve));
    slow.write(slowHead + slowBody.slice(0, 190_000));
    await new Promise((resolve) => setTimeout(resolve, 150)); // admitted, reading

    const other = body('other-call');
    const busy = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, raw: other, headers: { 'content-type': 'application/json' } });
    expectError(busy, 503, 'SERVICE_UNAVAILABLE');
    expect(busy.headers.get('retry-after')).toBe('1');

    slow.write(slowBody.slice(190_000)); // the server closes the connection after its answer
    await slowClosed;
    expect(slowAnswer).toMatch(/^HTTP\/1\.1 200 /);
    const retry = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, raw: other, headers: { 'content-type': 'application/json' } });
    expect(retry.status, retry.text).toBe(200);
    expect((await storedCalls(['slow-call', 'other-call'])).sort()).toEqual(['other-call', 'slow-call']);
  });

  it('answers headers over the limit with 431 as JSON with X-Request-Id, and logs it', async () => {
    const answer = await rawExchange(server.url, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    const requestId = /\r\nX-Request-Id: (\S+)\r\n/i.exec(answer)?.[1];
    expect(requestId).toBeTruthy();
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ code: 'REQUEST_HEADER_FIELDS_TOO_LARGE', reason: expect.any(String), request_id: requestId });
    expect(server.logs).toEqual(expect.arrayContaining([expect.objectContaining({ request_id: requestId, status: 431 })]));
  });

  it('refuses bodies to unknown routes unread (404), and typed-door batches of more than 10 procedures (400)', async () => {
    const unknown = await rest(server, 'POST', '/no/such/route', { key: member.api_key, body: { a: 1 } });
    expectError(unknown, 404, 'NOT_FOUND');
    // The typed door answers in tRPC's envelope, which its clients read.
    const unknownProcedure = await rest(server, 'POST', '/trpc/no.such.procedure', { key: member.api_key, body: { a: 1 } });
    expect(unknownProcedure.status).toBe(404);
    expect(unknownProcedure.body.error).toMatchObject({ data: { code: 'NOT_FOUND', httpStatus: 404 }, reason: expect.any(String), request_id: unknownProcedure.headers.get('x-request-id') });
    const batchOf = (n: number) => {
      const input = Object.fromEntries(Array.from({ length: n }, (_, i) => [i, {}]));
      return `/trpc/${Array(n).fill('me.read').join(',')}?batch=1&input=${encodeURIComponent(JSON.stringify(input))}`;
    };
    const batch = await rest(server, 'GET', batchOf(11), { key: member.api_key });
    expect(batch.status).toBe(400);
    expect(batch.body.error).toMatchObject({ data: { code: 'BAD_REQUEST' }, reason: expect.stringContaining('at most 10') });
    const ten = await rest(server, 'GET', batchOf(10), { key: member.api_key });
    expect(ten.status, ten.text).toBe(200);
    expect(ten.body).toHaveLength(10);
  });

  it('keeps metric labels bounded: paths clients invent never become route names', async () => {
    for (let i = 0; i < 30; i++) await rest(server, 'POST', `/trpc/invented${i}`, { body: {} });
    for (let i = 0; i < 30; i++) await rest(server, 'GET', `/invented/${i}`);
    const metrics = await rest(server, 'GET', '/metrics', { key: member.api_key });
    expect(metrics.status).toBe(200);
    expect(metrics.text).not.toContain('invented');
    expect(metrics.text).toMatch(/route="\/trpc\/unmatched",status="404"/);
  });

  it('bounds filter arrays (1,000 values) and offset (100,000) with a 400 naming the field', async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `c${i}`);
    const tooMany = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter: { call_ids: ids } } });
    expectError(tooMany, 400, 'BAD_REQUEST');
    expect(tooMany.body.reason).toContain('filter.call_ids');
    const justRight = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter: { call_ids: ids.slice(0, 1000) } } });
    expect(justRight.status, justRight.text).toBe(200);
    const feedback = await rest(server, 'POST', '/feedback/query', { key: member.api_key, body: { project_id: projectId, filter: { svc_refs: ids } } });
    expectError(feedback, 400, 'BAD_REQUEST');
    const offset = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, offset: 100_001 } });
    expectError(offset, 400, 'BAD_REQUEST');
    expect(offset.body.reason).toContain('offset');
  });

  it('refuses a call whose ended_at is before its started_at (400), storing nothing of the batch', async () => {
    const reply = await rest(server, 'POST', '/calls/batch/create', {
      key: member.api_key,
      body: { batch: [call(projectId, 'order-ok'), call(projectId, 'order-bad', { ended_at: '2026-01-02T03:04:05.000Z' })] },
    });
    expectError(reply, 400, 'BAD_REQUEST');
    expect(reply.body.reason).toContain('batch[1].ended_at');
    expect(await storedCalls(['order-ok', 'order-bad'])).toEqual([]);
  });

  it('refuses a cursor a client made or changed (400), on every query that pages by cursor', async () => {
    await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [call(projectId, 'cursor-1'), call(projectId, 'cursor-2')] } });
    const queue = await rest(server, 'POST', '/annotation_queues', { key: member.api_key, body: { project_id: projectId, name: 'cursors' } });
    await rest(server, 'POST', `/annotation_queues/${queue.body.id}/items`, { key: member.api_key, body: { project_id: projectId, call_ids: ['cursor-1', 'cursor-2'] } });
    await rest(server, 'POST', '/feedback/batch/create', {
      key: member.api_key,
      body: { batch: [1, 2].map((n) => ({ project_id: projectId, svc_ref: `svc:///${projectId}/call/cursor-${n}`, feedback_type: 'note', payload: { n } })) },
    });
    const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const path of ['/calls/query', '/feedback/query', `/annotation_queues/${queue.body.id}/items/query`]) {
      const page = (cursor?: string) => rest(server, 'POST', path, { key: member.api_key, body: { project_id: projectId, limit: 1, ...(cursor ? { cursor } : {}) } });
      const genuine = (await page()).body.next_cursor as string;
      const body = JSON.parse(Buffer.from(genuine, 'base64url').toString());
      // Another row's values, sealed again with a plain SHA-256 as a client can (the seal is an HMAC under the server key).
      const k = [...body.k.slice(0, -1), 'cursor-0'];
      const plain = createHash('sha256').update(JSON.stringify({ k, p: body.p, q: body.q })).digest('base64url');
      for (const forged of [cursorOf({ ...body, k, s: plain }), cursorOf({ ...body, k, s: plain.slice(0, 22) }), cursorOf({ ...body, k }), `${genuine}x`, cursorOf({ ...body, s: body.s.slice(1) })]) {
        const reply = await page(forged);
        expectError(reply, 400, 'BAD_REQUEST');
        expect(reply.body.reason, path).toMatch(/cursor is not a cursor this service gave/);
      }
      expect((await page(genuine)).status, path).toBe(200);
    }
  });
});

describeEachBackend('hostile request bodies: rate and time limits', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  const projectId = 'acme/slow';
  const RATE_WINDOW_MS = 5_000; // http/body.ts RATE_WINDOW_MS
  const TIMEOUT_MS = 7_000;
  const MIN_RATE = 2_000; // bytes per second: 10 KB per window

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_BODY_TIMEOUT_MS: String(TIMEOUT_MS), LOUPE_BODY_MIN_RATE_BYTES_PER_S: String(MIN_RATE) });
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  /** Sends a 20 KB call batch `bytesPerTick` bytes every 100 ms; resolves with the answer and when it came. */
  function trickle(id: string, bytesPerTick: number): Promise<{ answer: string; afterMs: number }> {
    const body = Buffer.from(JSON.stringify({ batch: [call(projectId, id, { inputs: { text: 'x'.repeat(20_000) } })] }));
    const { port } = new URL(server.url);
    return new Promise((resolve) => {
      const socket = connect(Number(port), '127.0.0.1');
      const started = Date.now();
      let answer = '';
      let sent = 0;
      let ticker: NodeJS.Timeout | undefined;
      socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
      socket.on('error', () => undefined);
      socket.once('close', () => {
        clearInterval(ticker);
        resolve({ answer, afterMs: Date.now() - started });
      });
      socket.once('connect', () => {
        socket.write(`POST /calls/batch/create HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(member.api_key)}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
        ticker = setInterval(() => {
          if (sent < body.length && answer === '') socket.write(body.subarray(sent, (sent += bytesPerTick)));
        }, 100);
      });
    });
  }

  it('cuts a body slower than the minimum rate, and one that takes longer than the time limit, with 408, storing nothing; a write after them is served', async () => {
    const [slow, late] = await Promise.all([
      trickle('too-slow', 50), // 500 bytes/s: cut after the first window
      trickle('too-late', 250), // 2,500 bytes/s passes each window, but 20 KB would take 8 s
    ]);
    const parse = (answer: string) => ({ status: Number(answer.slice(9, 12)), head: answer.slice(0, answer.indexOf('\r\n\r\n')), body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) });
    const tooSlow = parse(slow.answer);
    expect(tooSlow.status).toBe(408);
    expect(tooSlow.head).toMatch(/\r\nConnection: close/i);
    expect(tooSlow.body).toMatchObject({ code: 'REQUEST_TIMEOUT', reason: `The request body arrived slower than the server accepts (${MIN_RATE} bytes per second over 5 s).` });
    expect(tooSlow.body.request_id).toEqual(expect.any(String));
    expect(slow.afterMs).toBeGreaterThanOrEqual(RATE_WINDOW_MS - 100);
    expect(slow.afterMs).toBeLessThan(TIMEOUT_MS);
    const tooLate = parse(late.answer);
    expect(tooLate.status).toBe(408);
    expect(tooLate.body).toMatchObject({ code: 'REQUEST_TIMEOUT', reason: `The request body did not arrive within ${TIMEOUT_MS / 1000} s.` });
    expect(late.afterMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(late.afterMs).toBeLessThan(TIMEOUT_MS + 1_500);

    const stored = await rest(server, 'POST', '/calls/query', { key: member.api_key, body: { project_id: projectId, filter: { call_ids: ['too-slow', 'too-late'] } } });
    expect(stored.status).toBe(200);
    expect(stored.body.calls).toEqual([]);
    const served = await rest(server, 'POST', '/calls/batch/create', { key: member.api_key, body: { batch: [call(projectId, 'in-time')] } });
    expect(served.status, served.text).toBe(200);
  });
});
