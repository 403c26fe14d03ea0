import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUserViaCli, startChildServer, type ChildServer } from '../harness/child-server.ts';
import { freshDatabase, withClient, type TestDatabase } from '../harness/databases.ts';
import { allFeedback } from '../harness/feedback.ts';
import { basic } from '../harness/http.ts';

// Contract 4.2: "A crash mid-request leaves either all records or none." The server runs as its
// own process; a batch of 10,000 elements (~2 KB payload each, ~22 MB of JSON) is sent, the
// process is SIGKILLed while the request is in flight, the server is restarted on the same
// database, and the batch's ids are counted: 0 or 10,000, never anything in between.

const PROJECT = 'acme/crash';
const SIZE = 10_000;
const PAD = 'p'.repeat(2000);

type Outcome = { kind: 'response'; status: number } | { kind: 'error'; code: string } | { kind: 'pending' };

type InFlight = {
  /** Resolves when the whole body has been handed to the socket. */
  sent: Promise<number>;
  /** Settles with how the request ended (a response, or the connection dropping). */
  done: Promise<Outcome>;
  outcome(): Outcome;
};

function batchBody(ids: string[]): Buffer {
  const batch = ids.map((id, i) => ({
    project_id: PROJECT,
    id,
    svc_ref: `svc:///${PROJECT}/call/call-${i}`,
    feedback_type: 'crash.test',
    creator: 'crash-test',
    payload: { i, pad: PAD },
  }));
  return Buffer.from(JSON.stringify({ batch }));
}

/** POSTs the body on its own connection; `sent` resolves once the last byte is written. */
function post(url: string, apiKey: string, body: Buffer): InFlight {
  const { hostname, port } = new URL(url);
  let outcome: Outcome = { kind: 'pending' };
  let markSent!: (at: number) => void;
  const sent = new Promise<number>((resolve) => (markSent = resolve));
  const req = request({
    host: hostname,
    port: Number(port),
    method: 'POST',
    path: '/feedback/batch/create',
    agent: false,
    headers: { 'content-type': 'application/json', 'content-length': String(body.length), authorization: basic(apiKey) },
  });
  const done = new Promise<Outcome>((resolve) => {
    req.once('response', (response) => {
      response.resume();
      response.once('end', () => resolve((outcome = { kind: 'response', status: response.statusCode! })));
      response.once('error', (error: NodeJS.ErrnoException) => resolve((outcome = { kind: 'error', code: error.code ?? error.message })));
    });
    req.once('error', (error: NodeJS.ErrnoException) => resolve((outcome = { kind: 'error', code: error.code ?? error.message })));
  });
  req.end(body, () => markSent(performance.now()));
  return { sent, done, outcome: () => outcome };
}

const describeOutcome = (o: Outcome) => (o.kind === 'response' ? `answered ${o.status}` : o.kind === 'error' ? `dropped (${o.code})` : 'pending');

describeEachBackend('feedback batch crash safety (SIGKILL mid-request)', (backend) => {
  let database: TestDatabase;
  let apiKey: string;
  let server: ChildServer;
  /** For an uninterrupted (warm) batch, ms from the last byte sent to the first write, and to the response. */
  let calibration = { writeStartMs: 0, responseMs: 0 };
  /** How many records the project should hold: whole batches only. */
  let expectedTotal = 0;

  beforeAll(async () => {
    database = await freshDatabase(backend);
    ({ api_key: apiKey } = await createUserViaCli(database.url, { entity: 'acme', role: 'member' }));
    server = await startChildServer({ databaseUrl: database.url });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await database?.drop();
  });

  const countOf = async (ids: string[]) => (await allFeedback(server, apiKey, PROJECT, { ids })).length;

  /** Resolves when the database shows that the server is writing the batch's transaction. */
  async function writingStarted(signal: AbortSignal): Promise<number> {
    const started = performance.now();
    const seen = backend === 'postgresql' ? await postgresWriting(database.url, signal) : await sqliteWriting(database.url, signal);
    return seen ? performance.now() - started : Number.NaN;
  }

  it('stores uninterrupted batches of 10,000 (and measures when they write and answer)', async () => {
    // Twice: the first run warms the server up, the second gives the timings the kills aim at.
    for (let run = 0; run < 2; run++) {
      const ids = Array.from({ length: SIZE }, () => randomUUID());
      const body = batchBody(ids);
      expect(body.length).toBeGreaterThan(20_000_000);
      const inFlight = post(server.url, apiKey, body);
      const sentAt = await inFlight.sent;
      const abort = new AbortController();
      const writeStart = writingStarted(abort.signal);
      const outcome = await inFlight.done;
      const responseMs = performance.now() - sentAt;
      abort.abort();
      expect(outcome).toEqual({ kind: 'response', status: 200 });
      expect(await countOf(ids)).toBe(SIZE);
      expectedTotal += SIZE;
      calibration = { writeStartMs: await writeStart, responseMs };
      console.log(
        `[${backend}] uninterrupted batch of ${SIZE} (${(body.length / 1e6).toFixed(1)} MB), run ${run + 1}: ` +
          `writing began ${calibration.writeStartMs.toFixed(0)} ms and the answer came ${responseMs.toFixed(0)} ms after the last byte`,
      );
    }
    expect(calibration.writeStartMs).toBeLessThan(calibration.responseMs);
  }, 120_000);

  /** Kills `fraction` of the way through the transaction's writing, as timed by the calibration. */
  const intoTheWrites = (fraction: number) => async (inFlight: InFlight, signal: AbortSignal) => {
    await inFlight.sent;
    const seenAfter = await writingStarted(signal);
    const delay = fraction * (calibration.responseMs - calibration.writeStartMs);
    await sleep(delay);
    return `${(seenAfter + delay).toFixed(0)} ms after the body was sent (${seenAfter.toFixed(0)} ms to the first write, then ${delay.toFixed(0)} ms)`;
  };

  const moments: { name: string; killWhen: (inFlight: InFlight, signal: AbortSignal) => Promise<string> }[] = [
    {
      name: 'early (100 ms after the body was sent: parsing and validating)',
      killWhen: async (inFlight) => {
        await inFlight.sent;
        await sleep(100);
        return '100 ms after the body was sent';
      },
    },
    { name: 'as the transaction starts writing', killWhen: intoTheWrites(0) },
    { name: 'halfway through the writes', killWhen: intoTheWrites(0.5) },
    { name: 'near the commit', killWhen: intoTheWrites(0.9) },
  ];

  for (const moment of moments) {
    it(`a SIGKILL ${moment.name} leaves all 10,000 records or none after a restart`, async () => {
      expect(calibration.responseMs, 'the calibration test must run first').toBeGreaterThan(0);
      if (backend === 'postgresql') await postgresSettled(database.url);
      const ids = Array.from({ length: SIZE }, () => randomUUID());
      const inFlight = post(server.url, apiKey, batchBody(ids));
      const abort = new AbortController();
      // Kill at the moment, unless the request ends first (then there is nothing in flight).
      const when = await Promise.race([moment.killWhen(inFlight, abort.signal), inFlight.done.then((o) => `never: the request ${describeOutcome(o)} first`)]);
      abort.abort();
      const before = inFlight.outcome();
      const killed = before.kind === 'pending';
      if (killed) {
        await server.stop('SIGKILL');
        expect((await server.exited).signal).toBe('SIGKILL');
      }
      const after = await inFlight.done;
      if (killed) {
        server = await startChildServer({ databaseUrl: database.url });
      }
      const count = await countOf(ids);
      console.log(
        `[${backend}] kill ${moment.name}: ${killed ? `killed ${when}` : when}; the client saw the request ${describeOutcome(after)}; ` +
          `after restart ${count === SIZE ? 'ALL' : count === 0 ? 'NONE' : 'SOME'} of the batch is stored (${count}/${SIZE})`,
      );
      expect([0, SIZE], `${count} of ${SIZE} records survived`).toContain(count);
      // A batch the client saw succeed must be stored in full.
      if (after.kind === 'response' && after.status === 200) expect(count).toBe(SIZE);
      expectedTotal += count;
      // Nothing else appeared or vanished: the project holds whole batches only.
      expect((await allFeedback(server, apiKey, PROJECT)).length).toBe(expectedTotal);
    }, 120_000);
  }
});

const WRITING = `datname = current_database() and pid <> pg_backend_pid()
  and (state like 'idle in transaction%' or (state = 'active' and query ilike 'insert into%'))`;

/** Polls pg_stat_activity until a server connection is inside a transaction or runs an insert. */
async function postgresWriting(databaseUrl: string, signal: AbortSignal): Promise<boolean> {
  return withClient(databaseUrl, async (client) => {
    while (!signal.aborted) {
      const { rows } = await client.query(`select 1 from pg_stat_activity where ${WRITING}`);
      if (rows.length) return true;
      await sleep(2);
    }
    return false;
  });
}

/** Waits until no connection (say, of a killed server) is still inside a transaction. */
async function postgresSettled(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, async (client) => {
    for (let i = 0; i < 500; i++) {
      if (!(await client.query(`select 1 from pg_stat_activity where ${WRITING}`)).rows.length) return;
      await sleep(20);
    }
    throw new Error('a connection stayed inside a transaction for 10 s');
  });
}

/** Polls the SQLite WAL file until it is written (only the batch's transaction writes). */
async function sqliteWriting(databaseUrl: string, signal: AbortSignal): Promise<boolean> {
  const wal = `${databaseUrl.replace(/^sqlite:/, '')}-wal`;
  const stamp = () => {
    try {
      const s = statSync(wal);
      return `${s.size}/${s.mtimeMs}`;
    } catch {
      return 'none';
    }
  };
  const baseline = stamp();
  while (!signal.aborted) {
    if (stamp() !== baseline) return true;
    await sleep(1);
  }
  return false;
}
