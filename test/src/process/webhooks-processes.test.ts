import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUserViaCli, startChildServer, type ChildServer, type CliUser } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, type TestDatabase } from '../harness/databases.ts';
import { batchCreate, freeForm } from '../harness/feedback.ts';
import { rest } from '../harness/http.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

// Contract 5.13, at least once whatever crashes: the event is written in the transaction of the
// change, so a server killed after the commit and before the delivery delivers it after its
// restart; and any number of server processes deliver from one PostgreSQL database, one attempt
// per event and endpoint at a time; a process's deliveries wait for its free slots.

const ENV = {
  LOUPE_WEBHOOK_ALLOW_HTTP: 'true',
  LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true',
  LOUPE_WEBHOOK_POLL_MS: '50',
  LOUPE_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms',
  // A lease outlives an attempt by twice this and 5 s: a dead process's delivery is taken up 7 s after it was claimed.
  LOUPE_WEBHOOK_TIMEOUT_MS: '1000',
};

async function createHook(server: { url: string }, key: string, projectId: string, url: string): Promise<{ id: string; secret: string }> {
  const reply = await rest(server, 'POST', '/webhooks', { key, body: { project_id: projectId, url, events: ['*'] } });
  expect(reply.status, reply.text).toBe(200);
  return { id: reply.body.webhook.id, secret: reply.body.secret };
}

describeEachBackend('webhook delivery survives SIGKILL', (backend) => {
  let database: TestDatabase;
  let receiver: WebhookReceiver;
  let user: CliUser;
  let server: ChildServer | undefined;

  beforeAll(async () => {
    database = await freshDatabase(backend);
    receiver = await startWebhookReceiver();
    user = await createUserViaCli(database.url, { entity: 'acme', role: 'member' });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await receiver?.close();
    await database?.drop();
  });

  it('a feedback batch committed, the server killed before its delivery: delivered after the restart, same webhook-id', async () => {
    const projectId = 'acme/crash-hooks';
    server = await startChildServer({ databaseUrl: database.url, env: ENV });
    const hook = await createHook(server, user.api_key, projectId, receiver.urlOf('/crash'));
    receiver.setSecrets('/crash', [hook.secret]);
    // Until the kill, the receiver takes each attempt and never answers: nothing is delivered.
    let killed = false;
    receiver.respond('/crash', () => (killed ? { status: 200 } : 'hang'));
    const element = freeForm(projectId);
    expect((await batchCreate(server, user.api_key, [element])).status).toBe(200);
    const [attempt] = await receiver.waitFor('/crash', () => true);
    expect(await server.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    killed = true;
    const seenBeforeRestart = receiver.deliveries.filter((d) => d.path === '/crash').length;

    server = await startChildServer({ databaseUrl: database.url, env: ENV });
    const [delivered] = await receiver.waitFor('/crash', (d) => d.status === 200, { timeoutMs: 20_000 });
    expect(delivered!.id).toBe(attempt!.id);
    expect(delivered!.json.data.feedback.map((r: { id: string }) => r.id)).toEqual([element.id]);
    expect(delivered!.verifiedWith).toEqual([true]);
    expect(receiver.deliveries.filter((d) => d.path === '/crash').length).toBeGreaterThan(seenBeforeRestart);
    const deliveries = async () =>
      (await rest(server!, 'POST', `/webhooks/${hook.id}/deliveries/query`, { key: user.api_key, body: { project_id: projectId } })).body.deliveries;
    await expect.poll(async () => (await deliveries()).map((d: { state: string }) => d.state), { timeout: 5_000 }).toEqual(['delivered']);
  });
});

describeEachBackend('webhook delivery with one slot', (backend) => {
  let database: TestDatabase;
  let receiver: WebhookReceiver;
  let user: CliUser;
  let server: ChildServer;

  beforeAll(async () => {
    database = await freshDatabase(backend);
    receiver = await startWebhookReceiver();
    server = await startChildServer({ databaseUrl: database.url, env: { ...ENV, LOUPE_WEBHOOK_CONCURRENCY: '1' } });
    user = await createUserViaCli(database.url, { entity: 'acme', role: 'member' });
  });
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    await database?.drop();
  });

  it('events written while the only slot is taken wait for it, and are each delivered once', async () => {
    // The first write's delivery is leased to the worker and holds its one slot for 300 ms; the
    // writes meanwhile find no slot, and their deliveries wait, due, until it frees.
    const projectId = 'acme/one-slot';
    const hook = await createHook(server, user.api_key, projectId, receiver.urlOf('/one'));
    receiver.setSecrets('/one', [hook.secret]);
    const delays = new Map<string, number>();
    receiver.respond('/one', (delivery, n) => {
      const delayMs = n === 0 ? 300 : 20;
      delays.set(delivery.id, delayMs);
      return { status: 200, delayMs };
    });
    const elements = Array.from({ length: 4 }, () => freeForm(projectId));
    for (const element of elements) expect((await batchCreate(server, user.api_key, [element])).status).toBe(200);
    const delivered = await receiver.waitFor('/one', (d) => d.status === 200, { count: 4, timeoutMs: 10_000 });
    expect(delivered.map((d) => d.json.data.feedback[0].id).sort()).toEqual(elements.map((e) => e.id).sort());
    expect(new Set(delivered.map((d) => d.id)).size).toBe(4);
    // One at a time: each arrived after the one before it was answered.
    const arrivals = receiver.deliveries.filter((d) => d.path === '/one');
    for (let i = 1; i < arrivals.length; i++) expect(arrivals[i]!.at).toBeGreaterThanOrEqual(arrivals[i - 1]!.at + delays.get(arrivals[i - 1]!.id)! - 5);
    const deliveries = async () =>
      (await rest(server, 'POST', `/webhooks/${hook.id}/deliveries/query`, { key: user.api_key, body: { project_id: projectId } })).body.deliveries;
    await expect
      .poll(async () => (await deliveries()).map((d: { state: string; attempts: number }) => `${d.state} ${d.attempts}`), { timeout: 5_000 })
      .toEqual(Array(4).fill('delivered 1'));
  });
});

const NAME = 'webhook delivery from two server processes [postgresql]';

(postgresAvailable ? describe : describe.skip)(postgresAvailable ? NAME : `${NAME} — SKIPPED: TEST_DATABASE_URL is unset`, () => {
  let database: TestDatabase;
  let receiver: WebhookReceiver;
  let user: CliUser;
  const servers: ChildServer[] = [];

  beforeAll(async () => {
    database = await freshDatabase('postgresql');
    receiver = await startWebhookReceiver();
    for (let i = 0; i < 2; i++) servers.push(await startChildServer({ databaseUrl: database.url, env: ENV }));
    user = await createUserViaCli(database.url, { entity: 'acme', role: 'member' });
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await receiver?.close();
    await database?.drop();
  });

  it('every event is delivered, and no event is attempted by two processes at once', async () => {
    const projectId = 'acme/two-hooks';
    const [a, b] = servers as [ChildServer, ChildServer];
    const hook = await createHook(a, user.api_key, projectId, receiver.urlOf('/two'));
    receiver.setSecrets('/two', [hook.secret]);
    // Slow answers keep attempts open while the other process polls; every id's first attempt of
    // every third event fails, so retries (from either process) happen too.
    const firstSeen = new Set<string>();
    let n = 0;
    receiver.respond('/two', (delivery) => {
      const first = !firstSeen.has(delivery.id);
      firstSeen.add(delivery.id);
      return { status: first && n++ % 3 === 0 ? 500 : 200, delayMs: 30 + Math.floor(Math.random() * 120) };
    });
    const BATCHES = 40;
    const elements = Array.from({ length: BATCHES }, () => Array.from({ length: 10 }, () => freeForm(projectId)));
    await Promise.all(
      elements.map(async (batch, i) => expect((await batchCreate(i % 2 ? b : a, user.api_key, batch)).status).toBe(200)),
    );
    const delivered = await receiver.waitFor('/two', (d) => d.status === 200, { count: BATCHES, timeoutMs: 30_000 });
    const ids = new Set(delivered.map((d) => d.id));
    expect(ids.size).toBe(BATCHES);
    const records = new Set(delivered.flatMap((d) => d.json.data.feedback.map((r: { id: string }) => r.id)));
    expect(records).toEqual(new Set(elements.flat().map((e) => e.id)));
    expect(receiver.deliveries.filter((d) => d.path === '/two').every((d) => d.verifiedWith[0])).toBe(true);
    expect(receiver.maxOverlap()).toBe(1);
    // Each event delivered once: a delivered event is not attempted again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.deliveries.filter((d) => d.path === '/two' && d.status === 200)).toHaveLength(BATCHES);
    const failedFirst = receiver.deliveries.filter((d) => d.path === '/two' && d.status === 500).length;
    expect(failedFirst).toBeGreaterThan(0);
  });
});
