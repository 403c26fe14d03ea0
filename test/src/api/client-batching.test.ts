import { createClient } from '@loupe/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The typed client's `batch` option, seen from the server: which HTTP requests concurrent calls
// arrive as.

describeEachBackend('typed client batching', (backend) => {
  let server: TestServer;
  let alice: CreatedKeyForTest;
  beforeAll(async () => {
    server = await startTestServer(backend);
    alice = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  /**
   * Runs `work`, then expects the /trpc URLs (without their query strings) the server logs for it.
   * Polled: a request is logged once its connection is done with it, which may follow the answer.
   */
  async function expectRequests(work: () => Promise<unknown>, urls: string[], withMethod = false): Promise<void> {
    const from = server.logs.length;
    await work();
    const logged = () =>
      server.logs
        .slice(from)
        .filter((line) => line.msg === 'request' && String(line.url).startsWith('/trpc/'))
        .map((line) => `${withMethod ? `${String(line.method)} ` : ''}${String(line.url).split('?')[0]!}`)
        .sort();
    await expect.poll(logged).toEqual(urls);
  }

  const spec = (name: string) => ({ project_id: 'acme/batching', name, field_schema: { type: 'boolean' } });

  it("with batch 'queries', combines concurrent queries into one request and sends each mutation in its own", async () => {
    const client = createClient({ url: server.url, apiKey: alice.api_key, batch: 'queries' });
    await expectRequests(() => Promise.all([client.me.read.query({}), client.projects.query.query({})]), ['/trpc/me.read,projects.query']);
    await expectRequests(() => Promise.all([client.annotationSpecs.create.mutate(spec('a')), client.annotationSpecs.create.mutate(spec('b'))]), [
      '/trpc/annotationSpecs.create',
      '/trpc/annotationSpecs.create',
    ]);
  });

  it('by default combines concurrent mutations too; with batch false, combines nothing', async () => {
    const batched = createClient({ url: server.url, apiKey: alice.api_key });
    await expectRequests(() => Promise.all([batched.annotationSpecs.create.mutate(spec('c')), batched.annotationSpecs.create.mutate(spec('d'))]), [
      '/trpc/annotationSpecs.create,annotationSpecs.create',
    ]);
    const single = createClient({ url: server.url, apiKey: alice.api_key, batch: false });
    await expectRequests(() => Promise.all([single.me.read.query({}), single.projects.query.query({})]), ['/trpc/me.read', '/trpc/projects.query']);
  });

  it('splits a batch larger than the server takes (10 procedures) into requests it answers', async () => {
    const client = createClient({ url: server.url, apiKey: alice.api_key, batch: 'queries' });
    const names = (n: number) => Array.from({ length: n }, () => 'me.read').join(',');
    let answers: unknown[] = [];
    await expectRequests(async () => (answers = await Promise.all(Array.from({ length: 12 }, () => client.me.read.query({})))), [`/trpc/${names(10)}`, `/trpc/${names(2)}`].sort());
    expect(answers).toHaveLength(12);
  });

  it('sends a query whose input is too long for a URL as a POST, and splits a batch before its URL passes the bound', async () => {
    const client = createClient({ url: server.url, apiKey: alice.api_key, batch: 'queries' });
    const strangers = (n: number) => Array.from({ length: n }, () => crypto.randomUUID());
    // 1,000 ids (~40 kB of input): past the server's 16 KiB header bound as a URL.
    let long: unknown;
    await expectRequests(
      async () => ([long] = await Promise.all([client.projects.users.query({ project_id: 'acme/batching', user_ids: [...strangers(999), alice.user_id] }), client.me.read.query({})])),
      ['GET /trpc/me.read', 'POST /trpc/projects.users'],
      true,
    );
    expect(long).toEqual({ users: [{ user_id: alice.user_id, username: alice.username }] });
    // Five queries of 80 ids each (~3.3 kB apiece): short enough for a URL one by one, not all together.
    const answers: unknown[] = [];
    await expectRequests(async () => answers.push(...(await Promise.all(Array.from({ length: 5 }, () => client.projects.users.query({ project_id: 'acme/batching', user_ids: [alice.user_id, ...strangers(79)] }))))), [
      'GET /trpc/projects.users',
      'GET /trpc/projects.users,projects.users',
      'GET /trpc/projects.users,projects.users',
    ], true);
    expect(answers).toEqual(Array.from({ length: 5 }, () => ({ users: [{ user_id: alice.user_id, username: alice.username }] })));
  });
});
