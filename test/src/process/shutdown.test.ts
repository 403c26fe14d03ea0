import { existsSync, statSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUserViaCli, startChildServer, type ChildServer, type LogLine } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { basic } from '../harness/http.ts';

type Reply = { status: number; headers: IncomingMessage['headers']; text: string };

/** Resolves once `predicate` holds for some log line; the server writes its logs asynchronously. */
async function waitForLog(server: ChildServer, predicate: (line: LogLine) => boolean, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const index = server.logs.findIndex(predicate);
    if (index >= 0) return index;
    if (Date.now() > deadline) throw new Error(`no such log line within ${timeoutMs} ms:\n${server.logs.map((l) => JSON.stringify(l)).join('\n')}`);
    await sleep(20);
  }
}

/** Whether a brand-new TCP connection to the server's port is accepted. */
function connectionAccepted(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describeEachBackend('graceful shutdown of the server process', (backend) => {
  let database: TestDatabase;
  let server: ChildServer;
  let apiKey: string;

  beforeAll(async () => {
    database = await freshDatabase(backend);
    ({ api_key: apiKey } = await createUserViaCli(database.url, { entity: 'acme', role: 'member' }));
    server = await startChildServer({ databaseUrl: database.url });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await database?.drop();
  });

  it('on SIGTERM refuses new connections, finishes the in-flight request, logs "shut down" after it, and exits 0', async () => {
    const body = Buffer.from(JSON.stringify({ project_id: 'acme/p' }));
    const half = Math.floor(body.length / 2);
    const { hostname, port } = new URL(server.url);
    // A request whose body arrives slowly: headers and half the body now, the rest after SIGTERM.
    const slow = request({
      host: hostname,
      port: Number(port),
      method: 'POST',
      path: '/calls/query',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(body.length), authorization: basic(apiKey), 'x-request-id': 'slow-request' },
    });
    const reply = new Promise<Reply>((resolve, reject) => {
      slow.once('response', (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.once('end', () => resolve({ status: response.statusCode!, headers: response.headers, text }));
        response.once('error', reject);
      });
      slow.once('error', reject);
    });
    slow.flushHeaders();
    slow.write(body.subarray(0, half));
    await new Promise<void>((resolve) => slow.once('socket', (socket) => (socket.connecting ? socket.once('connect', resolve) : resolve())));
    // The server has the request once it has parsed its headers; a full round trip on another
    // connection after them, plus a margin, makes sure it has (no start-of-request signal exists).
    await sleep(200);
    expect((await fetch(`${server.url}/health`, { headers: { connection: 'close' } })).status).toBe(200);

    server.child.kill('SIGTERM');
    await waitForLog(server, (line) => line.msg === 'signal received');
    await sleep(50);
    expect(await connectionAccepted(server.url), 'a new connection after SIGTERM').toBe(false);

    await sleep(300);
    slow.end(body.subarray(half));
    const answer = await reply;
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ calls: [], next_cursor: null });

    const exit = await server.exited;
    expect(exit, server.stderr()).toEqual({ code: 0, signal: null });
    const accessLine = server.logs.findIndex((line) => line.request_id === 'slow-request' && line.msg === 'request');
    const shutDown = server.logs.findIndex((line) => line.msg === 'shut down');
    expect(server.logs[accessLine]).toMatchObject({ method: 'POST', url: '/calls/query', status: 200 });
    const order = server.logs.map((line) => line.msg).join(' | ');
    expect(shutDown, `"shut down" must follow the in-flight request's access line; order: ${order}`).toBeGreaterThan(accessLine);
    expect(server.stderr()).toBe('');
  });

  if (backend === 'sqlite') {
    it('leaves the SQLite file closed cleanly: checkpointed, no WAL left, integrity ok', () => {
      expect(server.child.exitCode).toBe(0);
      const path = database.url.slice('sqlite:'.length);
      // Checked before opening the file here: opening it would create a new WAL itself.
      expect(existsSync(`${path}-wal`), 'the -wal file after a clean close').toBe(false);
      expect(existsSync(`${path}-shm`), 'the -shm file after a clean close').toBe(false);
      expect(statSync(path).size).toBeGreaterThan(0);
      const db = new DatabaseSync(path);
      try {
        expect(db.prepare('pragma integrity_check').all()).toEqual([{ integrity_check: 'ok' }]);
        // The user made before start-up is in the main file, so the WAL really was checkpointed.
        expect(db.prepare('select count(*) as n from api_keys').get()).toEqual({ n: 1 });
      } finally {
        db.close();
      }
    });
  }
});
