import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createUser, openDatabase, sql, sqlRows, unitOfWork } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { startChildServer, type ChildServer } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { rest } from '../harness/http.ts';
import { addItems, claim, createQueue, createSomeCalls, progress, queryItems, stats, type Item } from '../harness/queues.ts';

// Contract 5.11 under load (issue 28, point 3): 20 annotators, each with their own user and key,
// claim and finish concurrently in an assigned queue of 200 items with overlap_coverage 0.2 and
// annotations_per_item 3, some items assigned to one of them; on PostgreSQL through two server
// processes on one database, on SQLite through its one process. Mid-run one assignee, holding a
// lease, is removed. No item ever gets more annotators than it needs: every claim is finished, so
// an over-claim would end as an item with more finished assignees than its quota. At the end
// covered items have exactly 3 and the others exactly 1; an item assigned to someone was worked by
// them alone; a non-assignee got nothing; the removed assignee's items were claimed by others.

const ITEMS = 200;
const ANNOTATORS = 20;
const COVERAGE = 0.2;
const PER_ITEM = 3;
const REMOVE_AFTER = 100;
const projectId = 'race/main';

/** The coverage point of an item id (README, "Assignment and overlap"): the first 52 bits of SHA-256 over 2^52. */
const pointOf = (id: string) => parseInt(createHash('sha256').update(id).digest('hex').slice(0, 13), 16) / 2 ** 52;
const requiredOf = (id: string) => (pointOf(id) < COVERAGE ? PER_ITEM : 1);

type User = { user_id: string; api_key: string };

describeEachBackend('claims racing in an assigned queue with overlap, across server processes', (backend) => {
  let database: TestDatabase;
  const servers: ChildServer[] = [];
  let owner: User;
  const annotators: User[] = [];
  let stranger: User;

  beforeAll(async () => {
    database = await freshDatabase(backend);
    // The users first, on the migrated database, as the admin tool makes them (its functions, in this process).
    const orm = await openDatabase(database.url, 1);
    try {
      const make = (name: string, role: 'admin' | 'annotator') => createUser(unitOfWork(orm), name, { entity: 'race', role });
      owner = await make('lead', 'admin');
      for (let i = 0; i < ANNOTATORS; i++) annotators.push(await make(`annotator${i}`, 'annotator'));
      stranger = await make('stranger', 'annotator');
    } finally {
      await orm.close(true);
    }
    const processes = backend === 'postgresql' ? 2 : 1;
    for (let i = 0; i < processes; i++) servers.push(await startChildServer({ databaseUrl: database.url, env: { LOUPE_LOG_LEVEL: 'warn' } }));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await database?.drop();
  });

  it('never hands an item to more annotators than it needs, nor to anyone but its assignee, and ends with every quota met exactly', async () => {
    let turn = 0;
    const next = () => servers[turn++ % servers.length]!;
    const first = servers[0]!;
    const callIds = await createSomeCalls(first, owner.api_key, projectId, ITEMS);
    const queueId = await createQueue(first, owner.api_key, projectId, {
      access: 'assigned',
      assignees: annotators.map((a) => a.user_id),
      overlap_coverage: COVERAGE,
      annotations_per_item: PER_ITEM,
      lease_seconds: 3600,
    });
    expect((await addItems(first, owner.api_key, projectId, queueId, callIds)).added_count).toBe(ITEMS);
    const items = await queryItems(first, owner.api_key, projectId, queueId, { limit: ITEMS });
    for (const item of items) expect(item.annotations_required).toBe(requiredOf(item.id));

    // Two single-annotator items each to annotators 0–4, and to the one who will be removed.
    const victim = annotators[ANNOTATORS - 1]!;
    const single = items.filter((item) => item.annotations_required === 1);
    const assignedTo = new Map<string, User>();
    for (const [k, user] of [...annotators.slice(0, 5), victim].entries()) {
      const pair = single.slice(2 * k, 2 * k + 2).map((item) => item.id);
      const reply = await rest(first, 'POST', `/annotation_queues/${queueId}/items/assign`, { key: owner.api_key, body: { project_id: projectId, item_ids: pair, user_id: user.user_id } });
      expect(reply.body).toEqual({ assigned_count: 2, missing_item_ids: [] });
      for (const id of pair) assignedTo.set(id, user);
    }

    // The victim takes their first assigned item and holds it.
    const held = (await claim(next(), victim.api_key, projectId, queueId)).body.item as Item;
    expect(assignedTo.get(held.id)).toBe(victim);

    let completions = 0;
    let removal: Promise<void> | undefined;
    const problems: string[] = [];
    const remove = async () => {
      const reply = await rest(next(), 'PUT', `/annotation_queues/${queueId}`, {
        key: owner.api_key,
        body: { project_id: projectId, assignees: annotators.slice(0, ANNOTATORS - 1).map((a) => a.user_id) },
      });
      if (reply.status !== 200) problems.push(`removal answered ${reply.status}: ${reply.text}`);
    };
    const work = async (user: User) => {
      for (;;) {
        const reply = await claim(next(), user.api_key, projectId, queueId);
        if (reply.status !== 200) {
          problems.push(`claim by ${user.user_id}: ${reply.status} ${reply.text}`);
          return;
        }
        const item = reply.body.item as Item | null;
        if (!item) return;
        const owned = assignedTo.get(item.id);
        if (owned && owned !== user && !(owned === victim && removal)) problems.push(`item ${item.id}, assigned to ${owned.user_id}, was handed to ${user.user_id}`);
        await sleep(Math.random() * 10);
        const done = await progress(next(), user.api_key, projectId, queueId, item.id, 'completed');
        if (done.status !== 200) problems.push(`progress by ${user.user_id}: ${done.status} ${done.text}`);
        if (++completions === REMOVE_AFTER) await (removal = remove());
      }
    };
    // A non-assignee keeps trying while the others work.
    let running = true;
    const strangerReplies: number[] = [];
    const strangerTries = (async () => {
      while (running) {
        strangerReplies.push((await claim(next(), stranger.api_key, projectId, queueId)).status);
        await sleep(20);
      }
    })();
    const workers = annotators.slice(0, ANNOTATORS - 1);
    await Promise.all(workers.map(work));
    // A worker that found nothing left just before an item came free looks once more.
    await Promise.all(workers.map(work));
    running = false;
    await strangerTries;
    expect(problems).toEqual([]);
    expect(removal).toBeDefined();
    expect(strangerReplies.length).toBeGreaterThan(0);
    expect(new Set(strangerReplies)).toEqual(new Set([403]));

    // The removed assignee may no longer claim or post progress.
    expect((await claim(next(), victim.api_key, projectId, queueId)).status).toBe(403);
    expect((await progress(next(), victim.api_key, projectId, queueId, held.id, 'completed')).status).toBe(403);

    // What is stored: every quota met exactly by the assignees, items assigned to one of them worked by them alone.
    const orm = await openDatabase(database.url, 1, { migrateNow: false });
    let records: { item_id: string; annotator_user_id: string; state: string }[];
    try {
      records = await sqlRows(unitOfWork(orm), sql`select item_id, annotator_user_id, state from annotation_item_progress where queue_id = ${queueId}`);
    } finally {
      await orm.close(true);
    }
    const assignees = new Set(workers.map((a) => a.user_id));
    const finishedBy = new Map<string, string[]>();
    for (const record of records) {
      expect(record.annotator_user_id).not.toBe(stranger.user_id);
      if (record.annotator_user_id === victim.user_id) {
        expect(record).toEqual({ item_id: held.id, annotator_user_id: victim.user_id, state: 'in_progress' });
        continue;
      }
      expect(assignees.has(record.annotator_user_id)).toBe(true);
      expect(record.state).toBe('completed');
      finishedBy.set(record.item_id, [...(finishedBy.get(record.item_id) ?? []), record.annotator_user_id]);
    }
    let covered = 0;
    for (const item of items) {
      const by = finishedBy.get(item.id) ?? [];
      expect(by.length, `item ${item.id} (point ${pointOf(item.id)})`).toBe(requiredOf(item.id));
      if (requiredOf(item.id) === PER_ITEM) covered++;
      const owned = assignedTo.get(item.id);
      if (owned && owned !== victim) expect(by).toEqual([owned.user_id]);
    }
    expect(covered).toBeGreaterThan(0);
    // The victim's items, the held one among them, were finished by others.
    for (const [id, user] of assignedTo) if (user === victim) expect(finishedBy.get(id)).toHaveLength(1);

    const final = await stats(first, owner.api_key, projectId, queueId);
    expect(final).toMatchObject({ total_items: ITEMS, done_items: ITEMS, completed_items: ITEMS });
    expect(final.by_assignee.map((entry) => entry.remaining)).toEqual(workers.map(() => 0));
    expect(final.by_assignee.reduce((sum, entry) => sum + entry.done, 0)).toBe(records.length - 1);
  }, 600_000);
});
