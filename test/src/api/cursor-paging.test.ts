import { createHash, randomBytes } from 'node:crypto';
import { createClient } from '@loupe/client';
import { openDatabase, sql, sqlRows } from '@loupe/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CursorHints } from '../../../clients/cli/src/cursor-hints.ts';
import { describeEachBackend } from '../harness/backends.ts';
import { basic, client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { batchCreate, freeForm, type StoredFeedback } from '../harness/feedback.ts';
import { addItems, createCalls, createQueue, queueWithItems, uniqueId, type Item } from '../harness/queues.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Contract 5.6: `cursor` / `next_cursor` on the calls, feedback and items queries.

type Page<T> = { rows: T[]; next_cursor: string | null };
const ids = (rows: readonly { id: string }[]) => rows.map((row) => row.id);
const FOREIGN = 'cursor does not belong to this query';

describeEachBackend('cursor paging', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  const projectId = `acme/cursor-${backend}`;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
  });
  afterAll(() => server?.stop());

  async function itemsPage(queueId: string, body: Record<string, unknown>): Promise<Page<Item>> {
    const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, { key: member.api_key, body: { project_id: projectId, ...body } });
    expect(reply.status, reply.text).toBe(200);
    return { rows: reply.body.items, next_cursor: reply.body.next_cursor };
  }

  async function feedbackPage(body: Record<string, unknown>): Promise<Page<StoredFeedback>> {
    const reply = await rest(server, 'POST', '/feedback/query', { key: member.api_key, body: { project_id: projectId, ...body } });
    expect(reply.status, reply.text).toBe(200);
    return { rows: reply.body.result, next_cursor: reply.body.next_cursor };
  }

  /** Every row by following next_cursor from the first page; also counts the pages. */
  async function follow<T>(read: (cursor: string | undefined) => Promise<Page<T>>): Promise<{ rows: T[]; pages: number }> {
    const rows: T[] = [];
    let cursor: string | undefined;
    for (let pages = 1; ; pages++) {
      const page = await read(cursor);
      expect(page.rows.length, 'a page a cursor leads to is never empty').toBeGreaterThan(0);
      rows.push(...page.rows);
      if (page.next_cursor === null) return { rows, pages };
      cursor = page.next_cursor;
    }
  }

  describe('items', () => {
    let queueId: string;
    let all: Item[];
    beforeAll(async () => {
      // Nine calls with repeated op names and start times, so that every sort has ties that id breaks.
      const callIds = await createCalls(
        server,
        member.api_key,
        projectId,
        Array.from({ length: 9 }, (_, i) => ({
          id: uniqueId(`c${i}`),
          op_name: ['b', 'a', 'c'][i % 3]!,
          started_at: `2026-01-0${1 + (i % 2)}T00:00:00.000Z`,
        })),
      );
      queueId = await createQueue(server, member.api_key, projectId);
      // Added one by one so that created_at differs between some items and ties between others.
      for (const chunk of [callIds.slice(0, 4), callIds.slice(4)]) await addItems(server, member.api_key, projectId, queueId, chunk);
      all = (await itemsPage(queueId, { limit: 100 })).rows;
      expect(all).toHaveLength(9);
    });

    it('answers next_cursor: null on the last page, and a cursor when rows remain', async () => {
      expect((await itemsPage(queueId, { limit: 100 })).next_cursor).toBeNull();
      expect((await itemsPage(queueId, { limit: 9 })).next_cursor).toBeNull();
      expect(typeof (await itemsPage(queueId, { limit: 8 })).next_cursor).toBe('string');
      // An offset page gives a cursor too, which continues after its last row.
      const offsetPage = await itemsPage(queueId, { limit: 2, offset: 3 });
      expect(ids((await itemsPage(queueId, { limit: 2, cursor: offsetPage.next_cursor })).rows)).toEqual(ids(all.slice(5, 7)));
    });

    const sorts: Record<string, unknown>[][] = [
      [],
      ...['created_at', 'updated_at', 'call_started_at', 'call_op_name'].flatMap((field) => [
        [{ field, direction: 'asc' }],
        [{ field, direction: 'desc' }],
      ]),
      [
        { field: 'call_op_name', direction: 'desc' },
        { field: 'call_started_at', direction: 'asc' },
      ],
    ];
    for (const sort_by of sorts) {
      it(`follows the cursor through the whole queue in the order ${JSON.stringify(sort_by)}`, async () => {
        const body = sort_by.length ? { sort_by } : {};
        const whole = (await itemsPage(queueId, { ...body, limit: 100 })).rows;
        for (const limit of [1, 2, 3, 4]) {
          const paged = await follow((cursor) => itemsPage(queueId, { ...body, limit, ...(cursor ? { cursor } : {}) }));
          expect(ids(paged.rows), `limit ${limit}`).toEqual(ids(whole));
          expect(paged.pages).toBe(Math.ceil(9 / limit));
        }
      });
    }

    it('follows the cursor within a filter, and ranks the page with include_position', async () => {
      const filter = { call_op_names: ['a', 'c'] };
      const whole = (await itemsPage(queueId, { filter, limit: 100, include_position: true })).rows;
      expect(whole).toHaveLength(6);
      const paged = await follow((cursor) => itemsPage(queueId, { filter, limit: 4, include_position: true, ...(cursor ? { cursor } : {}) }));
      expect(paged.rows).toEqual(whole);
      expect(paged.rows.map((item) => item.position_in_queue)).toEqual(paged.rows.map((item) => ids(all).indexOf(item.id) + 1));
    });

    const positions = (rows: readonly Item[]) => rows.map((item) => item.position_in_queue);

    it('numbers cursor pages on from the position of the page before', async () => {
      for (const sort_by of [undefined, [{ field: 'call_op_name', direction: 'desc' }, { field: 'call_started_at', direction: 'asc' }]]) {
        const body = sort_by ? { sort_by } : {};
        const whole = (await itemsPage(queueId, { ...body, limit: 100 })).rows;
        for (const limit of [1, 2, 4]) {
          const paged = await follow((cursor) => itemsPage(queueId, { ...body, limit, include_position: true, ...(cursor ? { cursor } : {}) }));
          expect(ids(paged.rows)).toEqual(ids(whole));
          expect(positions(paged.rows), `limit ${limit}`).toEqual(whole.map((_, index) => index + 1));
        }
      }
      // A cursor from a page read without positions, or from an offset page, numbers the next page all the same.
      const plain = await itemsPage(queueId, { limit: 3 });
      expect(positions(plain.rows)).toEqual([null, null, null]);
      expect(positions((await itemsPage(queueId, { limit: 3, include_position: true, cursor: plain.next_cursor })).rows)).toEqual([4, 5, 6]);
      const fromOffset = await itemsPage(queueId, { limit: 2, offset: 5 });
      expect(positions((await itemsPage(queueId, { limit: 2, include_position: true, cursor: fromOffset.next_cursor })).rows)).toEqual([8, 9]);
    });

    it('ranks a filtered cursor page over the whole queue, whether or not the page before was ranked', async () => {
      const filter = { call_op_names: ['b'] };
      for (const sort_by of [undefined, [{ field: 'created_at', direction: 'desc' }], [{ field: 'call_op_name', direction: 'desc' }, { field: 'call_started_at', direction: 'asc' }]]) {
        const body = { filter, ...(sort_by ? { sort_by } : {}) };
        const order = ids((await itemsPage(queueId, { ...(sort_by ? { sort_by } : {}), limit: 100 })).rows);
        const rank = (rows: readonly Item[]) => rows.map((item) => order.indexOf(item.id) + 1);
        const first = await itemsPage(queueId, { ...body, limit: 1 });
        const second = await itemsPage(queueId, { ...body, limit: 1, include_position: true, cursor: first.next_cursor });
        expect(positions(second.rows), JSON.stringify(sort_by)).toEqual(rank(second.rows));
        const third = await itemsPage(queueId, { ...body, limit: 5, include_position: true, cursor: second.next_cursor });
        expect(third.rows).toHaveLength(1);
        expect(positions(third.rows), JSON.stringify(sort_by)).toEqual(rank(third.rows));
      }
    });

    it('keeps numbering from the cursor when items are added before it afterwards', async () => {
      const { queueId: growing } = await queueWithItems(server, member.api_key, projectId, 6);
      // Newest first: an item added now comes before every item already read.
      const body = { sort_by: [{ field: 'created_at', direction: 'desc' }], include_position: true, limit: 2 };
      const first = await itemsPage(growing, body);
      expect(positions(first.rows)).toEqual([1, 2]);
      const [callId] = await createCalls(server, member.api_key, projectId, [{ id: uniqueId('early') }]);
      await addItems(server, member.api_key, projectId, growing, [callId!]);
      const next = await itemsPage(growing, { ...body, cursor: first.next_cursor });
      expect(positions(next.rows), 'the cursor page continues the numbering it started').toEqual([3, 4]);
      // The same rows by offset are ranked afresh, counting the new item.
      const fresh = await itemsPage(growing, { ...body, offset: 3 });
      expect(ids(fresh.rows)).toEqual(ids(next.rows));
      expect(positions(fresh.rows)).toEqual([4, 5]);
    });

    it('refuses an altered cursor, and one sealed again by a client (a plain hash, the old seal)', async () => {
      const page = await itemsPage(queueId, { limit: 2, include_position: true });
      const body = JSON.parse(Buffer.from(page.next_cursor!, 'base64url').toString());
      expect(body.p).toBe(2);
      const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const status = async (cursor: string) => {
        const reply = await rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, {
          key: member.api_key,
          body: { project_id: projectId, limit: 2, include_position: true, cursor },
        });
        return { status: reply.status, reason: reply.body.reason as string | undefined, items: (reply.body.items ?? []) as Item[] };
      };
      // Each change breaks the seal: another position, a position dropped, the seal dropped, another row.
      const { s: _seal, ...unsealed } = body;
      const { p: _position, ...unnumbered } = body;
      for (const altered of [{ ...body, p: 7 }, unnumbered, unsealed, { ...body, k: [...body.k.slice(0, -1), all[5]!.id] }]) {
        const reply = await status(cursorOf(altered));
        expect(reply.status, JSON.stringify(altered)).toBe(400);
        expect(reply.reason).toMatch(/not a cursor/);
      }
      // The seal is an HMAC under the server key: sealed again with a plain SHA-256 of the contents
      // (as seals once were), or cut short, a cursor is refused whatever it says, its own position included.
      const sealed = (p: unknown) => {
        const seal = createHash('sha256').update(JSON.stringify({ k: body.k, p, q: body.q })).digest('base64url');
        return [cursorOf({ q: body.q, k: body.k, p, s: seal.slice(0, 22) }), cursorOf({ q: body.q, k: body.k, p, s: seal })];
      };
      for (const p of [2, 1000, 0, -1, 1.5, '3', 2 ** 53, 1e300]) {
        for (const cursor of sealed(p)) {
          const reply = await status(cursor);
          expect(reply.status, String(p)).toBe(400);
          expect(reply.reason).toMatch(/not a cursor/);
        }
      }
      const reply = await status(cursorOf({ ...body, s: body.s.slice(0, 22) }));
      expect(reply.status).toBe(400);
      // The cursor as given still leads on.
      const genuine = await status(page.next_cursor!);
      expect(genuine.status).toBe(200);
      expect(positions(genuine.items)).toEqual([3, 4]);
    });

    it('continues without gap or repeat while items are being added', async () => {
      const { queueId: growing, items: before } = await queueWithItems(server, member.api_key, projectId, 40);
      const added: string[] = [];
      let reading = true;
      // A writer adds items (each later in created_at order) for as long as the reader pages.
      const writer = (async () => {
        while (reading) {
          const [callId] = await createCalls(server, member.api_key, projectId, [{ id: uniqueId('late') }]);
          await addItems(server, member.api_key, projectId, growing, [callId!]);
          added.push(callId!);
        }
      })();
      const paged = await follow((cursor) => itemsPage(growing, { limit: 3, ...(cursor ? { cursor } : {}) }));
      reading = false;
      await writer;
      expect(added.length, 'items were added while paging').toBeGreaterThan(0);
      const seen = ids(paged.rows);
      expect(new Set(seen).size, 'no item twice').toBe(seen.length);
      expect(seen.slice(0, 40), 'every item there before, in order').toEqual(ids(before));
      // What came after is a run of the added items, in the queue's order: nothing skipped between them.
      const everything = (await itemsPage(growing, { limit: 1000 })).rows;
      expect(seen).toEqual(ids(everything.slice(0, seen.length)));
    });

    it('refuses a cursor with offset, and a cursor of another queue, filter, sort or project', async () => {
      const { next_cursor: cursor } = await itemsPage(queueId, { limit: 2 });
      const refused = async (id: string, body: Record<string, unknown>, project = projectId) => {
        const reply = await rest(server, 'POST', `/annotation_queues/${id}/items/query`, { key: member.api_key, body: { project_id: project, ...body } });
        expect(reply.status, reply.text).toBe(400);
        return reply.body.reason as string;
      };
      expect(await refused(queueId, { cursor, offset: 0 })).toMatch(/cursor and offset/);
      const otherQueue = (await queueWithItems(server, member.api_key, projectId, 1)).queueId;
      expect(await refused(otherQueue, { cursor })).toContain(FOREIGN);
      expect(await refused(queueId, { cursor, filter: { call_op_names: ['a'] } })).toContain(FOREIGN);
      expect(await refused(queueId, { cursor, sort_by: [{ field: 'created_at', direction: 'desc' }] })).toContain(FOREIGN);
      const otherProject = `acme/cursor-other-${backend}`;
      const foreignQueue = (await queueWithItems(server, member.api_key, otherProject, 1)).queueId;
      expect(await refused(foreignQueue, { cursor }, otherProject)).toContain(FOREIGN);
      // A feedback cursor is not an items cursor.
      await batchCreate(server, member.api_key, [freeForm(projectId), freeForm(projectId)]);
      const feedbackCursor = (await feedbackPage({ limit: 1 })).next_cursor;
      expect(await refused(queueId, { cursor: feedbackCursor })).toContain(FOREIGN);
      // Garbage, and a well-formed cursor whose values have the wrong types: 400, never a database error.
      expect(await refused(queueId, { cursor: 'not a cursor' })).toMatch(/not a cursor/);
      const body = JSON.parse(Buffer.from(cursor!, 'base64url').toString());
      for (const k of [[1, 2], [{ d: 'yesterday' }, 'x'], ['2026-01-01', 'x'], [null, 'x'], [{ d: '2026-01-01T00:00:00Z' }]]) {
        const forged = Buffer.from(JSON.stringify({ ...body, k })).toString('base64url');
        expect(await refused(queueId, { cursor: forged }), JSON.stringify(k)).toMatch(/not a cursor/);
      }
      expect(await refused(queueId, { cursor: 'x'.repeat(5000) })).toMatch(/cursor/);
    });
  });

  describe('feedback', () => {
    const feedbackProject = `acme/cursor-feedback-${backend}`;
    beforeAll(async () => {
      // Creators with ties and nulls, in three batches (three created_at values).
      for (let b = 0; b < 3; b++) {
        const batch = Array.from({ length: 5 }, (_, i) =>
          freeForm(feedbackProject, { feedback_type: `t${i % 2}`, ...(i % 3 === 0 ? {} : { creator: `c${(i + b) % 2}` }) }),
        );
        const reply = await batchCreate(server, member.api_key, batch);
        expect(reply.status, reply.text).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    });
    const page = (body: Record<string, unknown>) => feedbackPage({ ...body, project_id: feedbackProject });

    for (const sort_by of [
      undefined,
      [{ field: 'created_at', direction: 'desc' }],
      [{ field: 'creator', direction: 'asc' }],
      [{ field: 'creator', direction: 'desc' }],
      [
        { field: 'feedback_type', direction: 'desc' },
        { field: 'creator', direction: 'asc' },
      ],
    ]) {
      it(`follows the cursor in the order ${JSON.stringify(sort_by ?? 'default')} (nullable creator included)`, async () => {
        const body = sort_by ? { sort_by } : {};
        const whole = (await page({ ...body, limit: 100 })).rows;
        expect(whole).toHaveLength(15);
        for (const limit of [1, 4, 7]) {
          const paged = await follow((cursor) => page({ ...body, limit, ...(cursor ? { cursor } : {}) }));
          expect(ids(paged.rows), `limit ${limit}`).toEqual(ids(whole));
        }
      });
    }

    it('repeats a single typed-door query\'s next_cursor in the Loupe-Next-Cursor header, and not on the last page or in a batch', async () => {
      const typed = async (procedures: string, inputs: unknown[]) => {
        const batch = inputs.length > 1 || procedures.includes(',');
        const input = batch ? Object.fromEntries(inputs.map((value, index) => [index, value])) : inputs[0];
        const query = new URLSearchParams({ ...(batch ? { batch: '1' } : {}), input: JSON.stringify(input) });
        const response = await fetch(`${server.url}/trpc/${procedures}?${query}`, { headers: { authorization: basic(member.api_key) } });
        const body = (await response.json()) as any;
        expect(response.status, JSON.stringify(body)).toBe(200);
        return { header: response.headers.get('loupe-next-cursor'), body };
      };
      const input = (cursor?: string) => ({ project_id: feedbackProject, limit: 7, ...(cursor ? { cursor } : {}) });
      const cursors: (string | null)[] = [];
      let cursor: string | undefined;
      do {
        const { header, body } = await typed('feedback.query', [input(cursor)]);
        expect(header).toBe(body.result.data.next_cursor);
        cursors.push(header);
        cursor = header ?? undefined;
      } while (cursor);
      // 15 records by 7: two pages that name a next one, then the last, without the header.
      expect(cursors.map((value) => typeof value)).toEqual(['string', 'string', 'object']);
      // A batch has several answers: no single cursor to repeat.
      const batched = await typed('feedback.query,feedback.query', [input(), input()]);
      expect(batched.body[0].result.data.next_cursor).toBe(cursors[0]);
      expect(batched.header).toBeNull();
    });

    it('hands the CLI\'s listener the next cursor from the header, before the answer is parsed', async () => {
      const hints = new CursorHints();
      const typed = createClient({ url: server.url, apiKey: member.api_key, batch: false, fetch: hints.fetch });
      const heard: string[] = [];
      let answered = false;
      const stop = hints.listen('feedback.query', (cursor) => heard.push(answered ? `late ${cursor}` : cursor));
      const first = await typed.feedback.query.query({ project_id: feedbackProject, limit: 7 });
      answered = true;
      expect(heard).toEqual([first.next_cursor]);
      // Another procedure's answers and those after stop() are not heard.
      await typed.calls.query.query({ project_id: feedbackProject, limit: 1 });
      stop();
      await typed.feedback.query.query({ project_id: feedbackProject, limit: 7, cursor: first.next_cursor! });
      expect(heard).toEqual([first.next_cursor]);
    });

    it('continues without gap or repeat while records are being added', async () => {
      const project = `acme/cursor-growing-${backend}`;
      const first = Array.from({ length: 30 }, () => freeForm(project));
      expect((await batchCreate(server, member.api_key, first)).status).toBe(200);
      let reading = true;
      let added = 0;
      const writer = (async () => {
        while (reading) {
          expect((await batchCreate(server, member.api_key, [freeForm(project)])).status).toBe(200);
          added++;
        }
      })();
      const paged = await follow((cursor) => feedbackPage({ project_id: project, limit: 4, ...(cursor ? { cursor } : {}) }));
      reading = false;
      await writer;
      expect(added).toBeGreaterThan(0);
      const seen = ids(paged.rows);
      expect(new Set(seen).size).toBe(seen.length);
      const everything = (await feedbackPage({ project_id: project, limit: 1000 })).rows;
      expect(seen).toEqual(ids(everything.slice(0, seen.length)));
      expect(new Set(seen)).toEqual(new Set([...seen, ...first.map((f) => f.id as string)]));
    });

    it('binds the cursor to the filter', async () => {
      const { next_cursor } = await page({ limit: 2 });
      const reply = await rest(server, 'POST', '/feedback/query', {
        key: member.api_key,
        body: { project_id: feedbackProject, cursor: next_cursor, filter: { feedback_types: ['t0'] } },
      });
      expect(reply.status).toBe(400);
      expect(reply.body.reason).toContain(FOREIGN);
    });
  });

  describe('calls, through the tRPC client', () => {
    it('pages by cursor within a filter, binds the cursor to it, and refuses cursor with offset', async () => {
      const project = `acme/cursor-calls-${backend}`;
      const made = await createCalls(
        server,
        member.api_key,
        project,
        Array.from({ length: 11 }, (_, i) => ({ id: uniqueId('k'), op_name: i % 2 ? 'odd' : 'even', started_at: `2026-02-0${1 + (i % 3)}T00:00:00.000Z` })),
      );
      const trpc = client(server, member.api_key);
      const filter = { op_names: ['even'] };
      const whole = await trpc.calls.query.query({ project_id: project, filter, limit: 100 });
      expect(whole.calls).toHaveLength(6);
      expect(whole.next_cursor).toBeNull();
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await trpc.calls.query.query({ project_id: project, filter, limit: 4, ...(cursor ? { cursor } : {}) });
        seen.push(...ids(page.calls));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      expect(seen).toEqual(ids(whole.calls));
      expect(new Set(seen)).toEqual(new Set(made.filter((_, i) => i % 2 === 0)));

      const { next_cursor } = await trpc.calls.query.query({ project_id: project, filter, limit: 1 });
      await expect(trpc.calls.query.query({ project_id: project, limit: 1, cursor: next_cursor! })).rejects.toThrow(FOREIGN);
      await expect(trpc.calls.query.query({ project_id: project, filter, offset: 1, cursor: next_cursor! })).rejects.toThrow(/cursor and offset/);
    });
  });
});

// Issue 23 point 8: cursors are sealed under the server key, LOUPE_SECRET or, when unset, the one
// the first server made and stored in the database.
describeEachBackend('cursor seal: the server key', (backend) => {
  const databases: TestDatabase[] = [];
  const running = new Set<TestServer>();
  afterAll(async () => {
    for (const server of running) await server.stop();
    for (const database of databases) await database.drop();
  });
  async function fresh(): Promise<TestDatabase> {
    const database = await freshDatabase(backend);
    databases.push(database);
    return database;
  }
  async function start(database: TestDatabase, env: Record<string, string> = {}): Promise<TestServer> {
    const server = await startTestServer(backend, env, database);
    running.add(server);
    return server;
  }
  async function stop(server: TestServer): Promise<void> {
    running.delete(server);
    await server.stop();
  }
  /** A queue of 3 items on `server`, and the cursor after its first item. */
  async function queueAndCursor(server: TestServer): Promise<{ key: string; queueId: string; cursor: string }> {
    const { api_key: key } = await createUser(server, { entity: 'acme', role: 'member', username: uniqueId('seal') });
    const { queueId } = await queueWithItems(server, key, 'acme/seal', 3);
    const { next_cursor: cursor } = (await itemsAfter(server, key, queueId)).body;
    return { key, queueId, cursor };
  }
  const itemsAfter = (server: TestServer, key: string, queueId: string, cursor?: string) =>
    rest(server, 'POST', `/annotation_queues/${queueId}/items/query`, { key, body: { project_id: 'acme/seal', limit: 1, ...(cursor ? { cursor } : {}) } });
  const secrets = (server: TestServer) => sqlRows<{ name: string; value: string }>(server.server.services.orm.em, sql`select name, value from server_secrets`);

  it('makes a key on first start and keeps it in the database: a cursor from before a restart still works', async () => {
    const database = await fresh();
    const first = await start(database);
    const { key, queueId, cursor } = await queueAndCursor(first);
    const before = await itemsAfter(first, key, queueId, cursor);
    expect(before.status, before.text).toBe(200);
    const [stored] = await secrets(first);
    expect(stored).toEqual({ name: 'cursor_seal', value: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    await stop(first);

    const again = await start(database);
    const after = await itemsAfter(again, key, queueId, cursor);
    expect(after.status, after.text).toBe(200);
    expect(after.body).toEqual(before.body);
    expect(await secrets(again)).toEqual([stored]);
  });

  if (backend === 'postgresql') {
    it('servers started at once on one database agree on one key', async () => {
      const database = await fresh();
      const orm = await openDatabase(database.url, 1); // migrated first, as a deployment does
      await orm.close(true);
      const servers = await Promise.all([start(database), start(database), start(database)]);
      expect(await secrets(servers[0]!)).toHaveLength(1);
      const { key, queueId, cursor } = await queueAndCursor(servers[0]!);
      const answers = await Promise.all(servers.map((server) => itemsAfter(server, key, queueId, cursor)));
      for (const answer of answers) expect(answer.status, answer.text).toBe(200);
      expect(new Set(answers.map((answer) => answer.text)).size).toBe(1);
    });
  }

  it('uses LOUPE_SECRET when set (storing nothing): a cursor sealed under another key is refused', async () => {
    const database = await fresh();
    const secretA = randomBytes(32).toString('hex');
    const withA = await start(database, { LOUPE_SECRET: secretA });
    const { key, queueId, cursor } = await queueAndCursor(withA);
    expect(await secrets(withA)).toEqual([]);
    await stop(withA);

    for (const env of [{ LOUPE_SECRET: randomBytes(32).toString('base64url') }, {}] as Record<string, string>[]) {
      const other = await start(database, env);
      const refused = await itemsAfter(other, key, queueId, cursor);
      expect(refused.status, JSON.stringify(env)).toBe(400);
      expect(refused.body).toMatchObject({ code: 'BAD_REQUEST', reason: expect.stringMatching(/not a cursor this service gave/) });
      await stop(other);
    }
    const backWithA = await start(database, { LOUPE_SECRET: secretA });
    expect((await itemsAfter(backWithA, key, queueId, cursor)).status).toBe(200);
  });
});
