import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUserViaCli, startChildServer, type ChildServer, type CliUser } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { basic } from '../harness/http.ts';
import { ExportResponse as Response, exportRequest, field, keyValue, nowNs, RpcStatus, span as wireSpan, text } from '../harness/otlp-wire.ts';

// Issue 26 point 6: hostile OTLP requests have a bounded cost, on the server as `npm start` runs
// it (384 MB heap): a gzip bomb, attribute values nested past the limit, 100,000 tiny spans in one
// request, malformed protobuf, ids of the wrong length, times out of range, a body of tiny
// attributes up to the size limit, a project of another entity. Each is answered with its 4xx (or
// a 200 naming the refused spans); /health keeps answering throughout; the peak RSS stays under the
// bound of the other hostile tests (memory-bound.test.ts).

const RSS_BOUND_MB = 640;
const LIMIT = 32 * 1024 * 1024;
const PATH = '/otel/v1/traces';

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** A span of `name` now, with random ids unless given. */
function span({ traceId = randomBytes(16), spanId = randomBytes(8), name = 'op', start = nowNs(), attributes = [] as Buffer[] } = {}): Buffer {
  return wireSpan({ traceId, spanId, name, start, end: start, attributes });
}

type Answer = { status: number; head: string; body: Buffer; ms: number };

/** A POST over a raw socket, reading the answer while still sending (an answer before the body comes at once). */
function exchange(url: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  const { port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (answer: Omit<Answer, 'ms'>) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve({ ...answer, ms: Date.now() - started });
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const split = received.indexOf('\r\n\r\n');
      if (split < 0) return;
      const head = received.subarray(0, split).toString('latin1');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? NaN);
      if (received.length - split - 4 >= length) finish({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, body: received.subarray(split + 4, split + 4 + length) });
    });
    socket.on('error', () => undefined);
    socket.once('close', () => finish({ status: 0, head: received.toString('latin1'), body: Buffer.alloc(0) }));
    socket.once('connect', () => {
      const lines = Object.entries({ ...headers, 'Content-Length': String(body.length) }).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`POST ${PATH} HTTP/1.1\r\nHost: x\r\n${lines.join('')}\r\n`);
      socket.write(body);
    });
  });
}

/** Polls GET /health until stopped: the worst latency and every status seen. */
function watchHealth(url: string) {
  let stopped = false;
  let worstMs = 0;
  const statuses = new Set<number>();
  const running = (async () => {
    while (!stopped) {
      const started = Date.now();
      const status = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) }).then(async (r) => (await r.arrayBuffer(), r.status), () => 0);
      statuses.add(status);
      worstMs = Math.max(worstMs, Date.now() - started);
      await sleep(100);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await running;
      return { worstMs, statuses: [...statuses] };
    },
  };
}

describeEachBackend('hostile OTLP requests (the server as npm start runs it)', (backend) => {
  let database: TestDatabase;
  let server: ChildServer;
  let member: CliUser;
  let headers: Record<string, string>;
  beforeAll(async () => {
    database = await freshDatabase(backend);
    server = await startChildServer({ databaseUrl: database.url, env: { LOUPE_LOG_LEVEL: 'warn' } });
    member = await createUserViaCli(database.url, { entity: 'acme', role: 'member' });
    headers = { 'Content-Type': 'application/x-protobuf', Authorization: basic(member.api_key), 'X-Loupe-Project': 'acme/hostile-otlp' };
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  /** Runs `attack` while /health is polled: /health answers 200 each time, within a second. */
  async function whileHealthy<T>(attack: () => Promise<T>): Promise<T> {
    const health = watchHealth(server.url);
    const result = await attack();
    const { worstMs, statuses } = await health.stop();
    expect(statuses).toEqual([200]);
    expect(worstMs).toBeLessThan(1_000);
    return result;
  }

  const status = (answer: Answer) => RpcStatus.toObject(RpcStatus.decode(answer.body)) as { code: number; message: string };

  it('gzip bombs (a few KB inflating past the limit), 8 at once: 413 each, inflation stopped at the limit', async () => {
    const bomb = gzipSync(Buffer.alloc(LIMIT * 4));
    expect(bomb.length).toBeLessThan(200_000);
    const answers = await whileHealthy(() => Promise.all(Array.from({ length: 8 }, () => exchange(server.url, { ...headers, 'Content-Encoding': 'gzip' }, bomb))));
    // One client's bodies past its share of the heap budget are refused at once (503); the others inflate to the limit and stop.
    expect(answers.filter((answer) => answer.status === 413).length).toBeGreaterThan(0);
    for (const answer of answers) {
      expect([413, 503], answer.head).toContain(answer.status);
      if (answer.status === 503) expect(answer.head).toMatch(/\r\nRetry-After: 1/i);
      else expect(JSON.parse(answer.body.toString())).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', reason: `The request body is larger than the server accepts (${LIMIT} bytes once inflated).` });
    }
    console.info(`[${backend}] gzip bombs: peak RSS ${peakRssMb(server.child.pid!).toFixed(0)} MB`);
    expect(peakRssMb(server.child.pid!)).toBeLessThan(RSS_BOUND_MB);
  }, 120_000);

  it('attribute values nested past the limit (2,000 levels): 400 Status, nothing decoded', async () => {
    let value: Buffer = field(1, text('leaf')); // AnyValue { string_value }
    for (let i = 0; i < 2_000; i++) value = field(6, field(1, keyValue('k', value))); // AnyValue { kvlist_value { values { key, value } } }
    const answer = await whileHealthy(() => exchange(server.url, headers, exportRequest([span({ attributes: [keyValue('deep', value)] })])));
    expect(answer.status).toBe(400);
    expect(answer.head).toMatch(/\r\ncontent-type: application\/x-protobuf/i);
    expect(status(answer)).toEqual({ code: 3, message: 'An attribute value nests arrays and key-value lists deeper than 16 levels.' });
  });

  it('100,000 tiny spans in one request, protobuf and OTLP/JSON: 413 with the span cap, in bounded time', async () => {
    const tiny = exportRequest(Array.from({ length: 100_000 }, () => Buffer.from([0x2a, 0x01, 0x78]))); // a span of only name "x"
    const json = Buffer.from(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: Array.from({ length: 100_000 }, () => ({ name: 'x' })) }] }] }));
    const [protobufAnswer, jsonAnswer] = await whileHealthy(() =>
      Promise.all([exchange(server.url, headers, tiny), exchange(server.url, { ...headers, 'Content-Type': 'application/json' }, json)]),
    );
    for (const answer of [protobufAnswer!, jsonAnswer!]) {
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body.toString()).reason).toMatch(/^The request holds (100000|more than 10000) spans; at most 10000 are accepted in one export/);
      expect(answer.ms).toBeLessThan(5_000);
    }
  });

  it('malformed protobuf (random bytes, a truncated message, a length past the end): 400 Status', async () => {
    const valid = exportRequest([span()]);
    const bodies = [randomBytes(1024 * 1024), valid.subarray(0, valid.length - 3), Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x07])];
    const answers = await whileHealthy(() => Promise.all(bodies.map((body) => exchange(server.url, headers, body))));
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(status(answer)).toMatchObject({ code: 3, message: expect.stringMatching(/^The protobuf body is not a valid ExportTraceServiceRequest/) });
    }
  });

  it('ids of the wrong length (up to 1 MB) and times past the year 2500: those spans refused in partialSuccess, briefly; the rest stored', async () => {
    const spans = [
      span({ name: 'kept', spanId: Buffer.from('0123456789abcdef', 'hex') }),
      span({ name: 'huge trace id', traceId: randomBytes(1024 * 1024) }),
      span({ name: 'short span id', spanId: randomBytes(3) }),
      span({ name: 'far future', start: 2n ** 64n - 1n }),
    ];
    const answer = await whileHealthy(() => exchange(server.url, headers, exportRequest(spans)));
    expect(answer.status).toBe(200);
    const response = Response.toObject(Response.decode(answer.body), { longs: Number }) as { partial_success: { rejected_spans: number; error_message: string } };
    expect(response.partial_success.rejected_spans).toBe(3);
    expect(response.partial_success.error_message).toMatch(/^3 of 4 spans refused: span [0-9a-f]{16} "huge trace id": its trace id is not 16 bytes/);
    expect(response.partial_success.error_message.length).toBeLessThan(1_000);
    const stored = await fetch(`${server.url}/calls/0123456789abcdef?project_id=acme/hostile-otlp`, { headers: { authorization: basic(member.api_key) } });
    expect(stored.status).toBe(200);
  });

  it('a body of tiny attributes up to the size limit: 413 for the memory it would take, within the RSS bound', async () => {
    const attribute = keyValue('k', field(1, text('v'))); // 9 bytes each
    const perSpan = Array.from({ length: 5_000 }, () => attribute);
    const spans = Array.from({ length: Math.floor((LIMIT - 1024) / (5_000 * 11 + 60)) }, () => span({ attributes: perSpan }));
    const body = exportRequest(spans);
    expect(body.length).toBeGreaterThan(LIMIT * 0.9);
    const answers = await whileHealthy(() => Promise.all([1, 2, 3, 4].map(() => exchange(server.url, headers, body))));
    for (const answer of answers) {
      expect([413, 503]).toContain(answer.status);
      if (answer.status === 413) expect(JSON.parse(answer.body.toString()).reason).toMatch(/^The request body would take more memory than one request may hold/);
    }
    console.info(`[${backend}] tiny attributes: ${answers.map((a) => a.status).join(' ')}; peak RSS ${peakRssMb(server.child.pid!).toFixed(0)} MB`);
    expect(peakRssMb(server.child.pid!)).toBeLessThan(RSS_BOUND_MB);
  }, 120_000);

  it('X-Loupe-Project of another entity: 403 before a 32 MiB body is read', async () => {
    const body = Buffer.alloc(LIMIT - 1024, 0x0a);
    const answer = await whileHealthy(() => exchange(server.url, { ...headers, 'X-Loupe-Project': 'other/project' }, body));
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body.toString())).toMatchObject({ code: 'FORBIDDEN', reason: 'You are not a member of entity "other".' });
    expect(answer.ms).toBeLessThan(2_000);
  });
});
