import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUserViaCli, startChildServer, type ChildServer, type CliUser } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { basic, rest } from '../harness/http.ts';
import { createQueue, uniqueId } from '../harness/queues.ts';

// Issue 23 points 1 and 5: what one authenticated client (a viewer is enough) or one anonymous
// address can hold of the server — request bodies that never arrive, bodies padded to the limit
// that open event streams, idle connections — leaves everyone else served. The server runs as
// `npm start` runs it.

const LIMIT = 32 * 1024 * 1024;
/** The default window over which a body's rate is judged (RATE_WINDOW_MS in http/body.ts). */
const RATE_WINDOW_MS = 5_000;

/** A raw connection that records what the server sends and when it closes. */
class RawConnection {
  readonly socket: Socket;
  readonly opened = Date.now();
  text = '';
  closedAfterMs: number | undefined;
  readonly connected: Promise<void>;
  readonly closed: Promise<number>;

  constructor(url: string, localAddress?: string) {
    const { port, hostname } = new URL(url);
    this.socket = connect({ port: Number(port), host: hostname, localAddress });
    this.socket.setEncoding('latin1').on('data', (chunk: string) => (this.text += chunk));
    this.socket.on('error', () => undefined); // a reset shows as the close
    this.connected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.closed = new Promise((resolve) =>
      this.socket.once('close', () => {
        this.closedAfterMs = Date.now() - this.opened;
        resolve(this.closedAfterMs);
      }),
    );
  }

  /** Waits until what the server sent matches, at most `ms` (or until the connection closes). */
  async until(match: (text: string) => boolean, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!match(this.text)) {
      if (this.closedAfterMs !== undefined && !match(this.text)) throw new Error(`closed before the expected answer; got: ${this.text.slice(0, 300)}`);
      if (Date.now() > deadline) throw new Error(`no expected answer within ${ms} ms; got: ${this.text.slice(0, 300)}`);
      await sleep(20);
    }
  }

  /** The status, headers and JSON body of a complete answer with a Content-Length. */
  answer(): { status: number; head: string; body: any } {
    const split = this.text.indexOf('\r\n\r\n');
    const head = this.text.slice(0, split);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, body: JSON.parse(this.text.slice(split + 4, split + 4 + length)) };
  }

  close(): void {
    this.socket.destroy();
  }
}

const completeAnswer = (text: string) => {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return false;
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, split))?.[1] ?? NaN);
  return text.length - split - 4 >= length;
};

/** Polls GET /health until stopped; the worst latency and every status seen. */
function watchHealth(url: string) {
  let stopped = false;
  let worstMs = 0;
  const statuses = new Set<number>();
  const running = (async () => {
    while (!stopped) {
      const started = Date.now();
      const status = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) }).then(
        async (r) => (await r.arrayBuffer(), r.status),
        () => 0,
      );
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

/** A write of about 1 KB by `member`: answered 2xx within 1 s, and stored. */
async function smallWriteIsServed(server: ChildServer, member: CliUser, feedbackType: string): Promise<number> {
  const started = Date.now();
  const record = { project_id: 'acme/hostile', svc_ref: 'svc:///acme/hostile/call/c1', feedback_type: feedbackType, payload: { note: 'x'.repeat(900) } };
  const reply = await rest(server, 'POST', '/feedback/batch/create', { key: member.api_key, body: { batch: [record] } });
  const tookMs = Date.now() - started;
  expect(reply.status, reply.text).toBe(200);
  expect(reply.body.res).toHaveLength(1);
  expect(tookMs).toBeLessThan(1_000);
  const stored = await rest(server, 'POST', '/feedback/query', { key: member.api_key, body: { project_id: 'acme/hostile', filter: { feedback_types: [feedbackType] } } });
  expect(stored.status).toBe(200);
  expect(stored.body.result.map((r: { payload: unknown }) => r.payload)).toEqual([record.payload]);
  return tookMs;
}

describeEachBackend('hostile request bodies (the server as npm start runs it)', (backend) => {
  let database: TestDatabase;
  let server: ChildServer;
  let member: CliUser;
  let otherMember: CliUser;
  let viewer: CliUser;
  beforeAll(async () => {
    database = await freshDatabase(backend);
    server = await startChildServer({ databaseUrl: database.url, env: { LOUPE_LOG_LEVEL: 'warn' } });
    [member, otherMember, viewer] = await Promise.all([
      createUserViaCli(database.url, { entity: 'acme', role: 'member' }),
      createUserViaCli(database.url, { entity: 'acme', role: 'member' }),
      createUserViaCli(database.url, { entity: 'acme', role: 'viewer' }),
    ]);
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('two sockets declaring 32 MiB and sending nothing (a member, then a viewer) hold nothing: a 1 KB write is served within 1 s, and they are cut with 408', async () => {
    for (const attacker of [otherMember, viewer]) {
      const health = watchHealth(server.url);
      const stalled = [new RawConnection(server.url), new RawConnection(server.url)];
      await Promise.all(stalled.map((c) => c.connected));
      const sentAt = Date.now();
      for (const connection of stalled) {
        connection.socket.write(
          `POST /feedback/batch/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: ${basic(attacker.api_key)}\r\nContent-Length: ${LIMIT}\r\n\r\n`,
        );
      }
      // No answer or event tells that the server has admitted the two; this is ample for it.
      await sleep(500);
      const tookMs = await smallWriteIsServed(server, member, uniqueId('small'));

      for (const connection of stalled) {
        await connection.until(completeAnswer, RATE_WINDOW_MS + 5_000);
        const { status, head, body } = connection.answer();
        expect(status).toBe(408);
        expect(head).toMatch(/\r\nConnection: close/i);
        expect(body).toMatchObject({ code: 'REQUEST_TIMEOUT', reason: expect.stringMatching(/^The request body arrived slower than the server accepts/) });
        await connection.closed;
      }
      const cutAfterMs = Date.now() - sentAt;
      expect(cutAfterMs).toBeLessThan(RATE_WINDOW_MS + 3_000);
      const { worstMs, statuses } = await health.stop();
      expect(statuses).toEqual([200]);
      expect(worstMs).toBeLessThan(1_000);
      console.info(`[${backend}] stalled bodies (${attacker === viewer ? 'viewer' : 'member'}): 1 KB write ${tookMs} ms, cut after ${cutAfterMs} ms, worst /health ${worstMs} ms`);
    }
  }, 60_000);

  it('two event streams opened by POST with 32 MB of padding hold no budget once they stream: a 1 KB write is served within 1 s', async () => {
    const queueId = await createQueue(server, member.api_key, 'acme/hostile');
    const health = watchHealth(server.url);
    const input = JSON.stringify({ project_id: 'acme/hostile', queue_id: queueId });
    const padded = Buffer.from(input + ' '.repeat(32_000_000));
    const streams = [new RawConnection(server.url), new RawConnection(server.url)];
    try {
      await Promise.all(streams.map((c) => c.connected));
      for (const stream of streams) {
        stream.socket.write(
          `POST /trpc/annotationQueues.events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAuthorization: ${basic(viewer.api_key)}\r\nContent-Length: ${padded.length}\r\n\r\n`,
        );
        stream.socket.write(padded);
      }
      // Each stream is open: its head is 200 and tRPC's "connected" event has come.
      for (const stream of streams) {
        await stream.until((text) => /\r\n\r\n[\s\S]*event: connected/.test(text), 20_000);
        expect(stream.text).toMatch(/^HTTP\/1\.1 200 /);
        expect(stream.text).toMatch(/\r\ncontent-type: text\/event-stream/i);
      }
      const tookMs = await smallWriteIsServed(server, member, uniqueId('beside-streams'));
      console.info(`[${backend}] two padded event streams open: 1 KB write ${tookMs} ms`);
      // The streams still deliver.
      const put = await rest(server, 'PUT', `/annotation_queues/${queueId}`, { key: member.api_key, body: { project_id: 'acme/hostile', description: 'changed' } });
      expect(put.status).toBe(200);
      for (const stream of streams) await stream.until((text) => text.includes('queue_updated'), 2_000);
    } finally {
      for (const stream of streams) stream.close();
    }
    const { worstMs, statuses } = await health.stop();
    expect(statuses).toEqual([200]);
    expect(worstMs).toBeLessThan(1_000);
    console.info(`[${backend}] two padded event streams: worst /health ${worstMs} ms`);
  }, 60_000);
});

describeEachBackend('hostile connections (the server as npm start runs it, under ulimit -n 1024)', (backend) => {
  let database: TestDatabase;
  let server: ChildServer;
  let member: CliUser;
  const PER_ADDRESS = 256; // LOUPE_MAX_CONNECTIONS_PER_ADDRESS's default
  const HEADERS_TIMEOUT_MS = 10_000; // LOUPE_HEADERS_TIMEOUT_MS's default
  beforeAll(async () => {
    database = await freshDatabase(backend);
    server = await startChildServer({ databaseUrl: database.url, env: { LOUPE_LOG_LEVEL: 'warn' }, fileLimit: 1024 });
    member = await createUserViaCli(database.url, { entity: 'acme', role: 'member' });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('an anonymous address holding 600 idle sockets gets 256; the rest are refused 503; /health and writes from elsewhere are served; idle ones close within the head timeout', async () => {
    const health = watchHealth(server.url);
    // The attacker's address is another loopback address than the test's own.
    const idle = Array.from({ length: 600 }, () => new RawConnection(server.url, '127.0.0.2'));
    await Promise.all(idle.map((c) => Promise.race([c.connected, c.closed])));
    const openedAt = Date.now();
    // Those over the address's cap are answered at once and closed.
    const refusedBy = Date.now() + 2_000;
    while (idle.filter((c) => c.closedAfterMs !== undefined).length < 600 - PER_ADDRESS && Date.now() < refusedBy) await sleep(20);
    const refused = idle.filter((c) => c.closedAfterMs !== undefined);
    expect(refused).toHaveLength(600 - PER_ADDRESS);
    for (const connection of refused) {
      const { status, head, body } = connection.answer();
      expect(status).toBe(503);
      expect(head).toMatch(/\r\nRetry-After: \d+/i);
      expect(body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: expect.stringMatching(/open connections as one address may/) });
    }
    // The 256 held: everyone else is served.
    const healthStarted = Date.now();
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(Date.now() - healthStarted).toBeLessThan(1_000);
    await smallWriteIsServed(server, member, uniqueId('beside-idle'));

    // Sockets that send nothing are closed (408) within the head timeout and Node's 1 s check.
    const held = idle.filter((c) => c.closedAfterMs === undefined);
    await Promise.all(held.map((c) => c.closed));
    const closedAfterMs = Date.now() - openedAt;
    expect(closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
    for (const connection of held) {
      expect(connection.answer().status).toBe(408);
      expect(connection.answer().body).toMatchObject({ code: 'REQUEST_TIMEOUT', reason: expect.any(String) });
    }
    const { worstMs, statuses } = await health.stop();
    expect(statuses).toEqual([200]);
    expect(worstMs).toBeLessThan(1_000);
    expect(server.child.exitCode).toBeNull();
    console.info(`[${backend}] 600 idle sockets: ${refused.length} refused, ${held.length} closed after ${closedAfterMs} ms; worst /health ${worstMs} ms`);
  }, 60_000);
});
