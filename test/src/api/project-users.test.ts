import { createClient } from '@loupe/client';
import { sql, sqlRun } from '@loupe/server';
import { QueryClient } from '@tanstack/react-query';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, freeForm } from '../harness/feedback.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { progress, queueWithItems, stats } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { userNamesQuery } from '../../../clients/web/src/users/user-names-query.ts';

describeEachBackend('usernames of a project', (backend) => {
  let server: TestServer;
  const projectId = 'acme/people';
  let lead: CreatedKeyForTest; // member of acme
  let viewer: CreatedKeyForTest; // viewer of acme
  let annotators: CreatedKeyForTest[]; // members of acme who annotate the queue
  let formerAnnotator: CreatedKeyForTest; // annotated the queue, then left acme
  let formerReviewer: CreatedKeyForTest; // wrote feedback in the project, then left acme
  let formerElsewhere: CreatedKeyForTest; // wrote feedback in another project of acme, then left acme
  let stranger: CreatedKeyForTest; // member of another entity, with data of its own
  let annotatorIds: string[];

  beforeAll(async () => {
    server = await startTestServer(backend);
    lead = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
    annotators = [await createUser(server, { entity: 'acme', role: 'member' }), await createUser(server, { entity: 'acme', role: 'member' })];
    formerAnnotator = await createUser(server, { entity: 'acme', role: 'member' });
    formerReviewer = await createUser(server, { entity: 'acme', role: 'member' });
    formerElsewhere = await createUser(server, { entity: 'acme', role: 'member' });
    stranger = await createUser(server, { entity: 'other', role: 'member' });

    const { queueId, items } = await queueWithItems(server, lead.api_key, projectId, 3);
    for (const [i, who] of [...annotators, formerAnnotator].entries()) {
      const reply = await progress(server, who.api_key, projectId, queueId, items[i]!.id, 'completed');
      expect(reply.status, reply.text).toBe(200);
    }
    expect((await batchCreate(server, formerReviewer.api_key, [freeForm(projectId)])).status).toBe(200);
    expect((await batchCreate(server, formerElsewhere.api_key, [freeForm('acme/elsewhere')])).status).toBe(200);
    expect((await batchCreate(server, stranger.api_key, [freeForm('other/x')])).status).toBe(200);
    const { em } = server.server.services.orm;
    for (const former of [formerAnnotator, formerReviewer, formerElsewhere]) {
      await sqlRun(em, sql`delete from memberships where user_id = ${former.user_id} and entity = ${'acme'}`);
    }
    annotatorIds = (await stats(server, viewer.api_key, projectId, queueId)).by_annotator.map((row) => row.annotator_user_id);
    expect(annotatorIds.sort()).toEqual([...annotators, formerAnnotator].map((who) => who.user_id).sort());
  });
  afterAll(() => server?.stop());

  const users = (body: Record<string, unknown>, key?: string) => rest(server, 'POST', '/projects/users', { body, ...(key ? { key } : {}) });
  const named = (...who: CreatedKeyForTest[]) => who.map(({ user_id, username }) => ({ user_id, username }));

  it("names the annotators of a project's stats for a viewer and a member, in the order asked", async () => {
    for (const key of [viewer.api_key, lead.api_key]) {
      const reply = await users({ project_id: projectId, user_ids: annotatorIds }, key);
      expect(reply.status, reply.text).toBe(200);
      const byId = new Map([...annotators, formerAnnotator].map((who) => [who.user_id, who]));
      expect(reply.body).toEqual({ users: named(...annotatorIds.map((id) => byId.get(id)!)) });
    }
  });

  it('names members of the entity (any role) and former members whose progress or feedback is in the project; repeats once', async () => {
    const asked = [formerReviewer, viewer, lead, formerAnnotator, viewer].map((who) => who.user_id);
    const reply = await users({ project_id: projectId, user_ids: asked }, viewer.api_key);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({ users: named(formerReviewer, viewer, lead, formerAnnotator) });
  });

  it('leaves out unknown ids and users unrelated to the project, with the same answer as for nothing', async () => {
    const asked = [stranger.user_id, formerElsewhere.user_id, 'no-such-user', '01900000-0000-7000-8000-000000000000'];
    const unrelated = await users({ project_id: projectId, user_ids: asked }, viewer.api_key);
    expect(unrelated.status, unrelated.text).toBe(200);
    expect(unrelated.body).toEqual({ users: [] });
    expect(unrelated.text).not.toContain(stranger.username);
    expect(unrelated.text).not.toContain(formerElsewhere.username);

    const mixed = await users({ project_id: projectId, user_ids: [stranger.user_id, annotators[0]!.user_id, 'no-such-user'] }, viewer.api_key);
    expect(mixed.body).toEqual({ users: named(annotators[0]!) });
    expect((await users({ project_id: projectId, user_ids: [] }, viewer.api_key)).body).toEqual({ users: [] });
  });

  it('names the members of an entity in a project that holds no data yet', async () => {
    const reply = await users({ project_id: 'acme/new', user_ids: [lead.user_id, formerAnnotator.user_id] }, viewer.api_key);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({ users: named(lead) });
  });

  it('refuses a non-member (403), no credentials (401) and a bad project id (400), each with a reason', async () => {
    const outsider = await users({ project_id: projectId, user_ids: [lead.user_id] }, stranger.api_key);
    expect(outsider.status, outsider.text).toBe(403);
    expect(outsider.body.reason).toContain('acme');
    expect(outsider.text).not.toContain(lead.username);
    const gone = await users({ project_id: projectId, user_ids: [lead.user_id] }, formerAnnotator.api_key);
    expect(gone.status, gone.text).toBe(403);
    expect((await users({ project_id: projectId, user_ids: [lead.user_id] })).status).toBe(401);
    const bad = await users({ project_id: 'no-slash', user_ids: [] }, lead.api_key);
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.reason).toContain('project_id');
  });

  it('takes at most 1,000 ids of 1–128 characters that a database can store: anything else is a 400 naming user_ids', async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `u${i}`);
    const tooMany = await users({ project_id: projectId, user_ids: ids }, viewer.api_key);
    expect(tooMany.status, tooMany.text).toBe(400);
    expect(tooMany.body.reason).toContain('user_ids');
    const most = await users({ project_id: projectId, user_ids: [...ids.slice(0, 999), lead.user_id] }, viewer.api_key);
    expect(most.status, most.text).toBe(200);
    expect(most.body).toEqual({ users: named(lead) });
    const oversized = await users({ project_id: projectId, user_ids: ['x'.repeat(129)] }, viewer.api_key);
    expect(oversized.status).toBe(400);
    const unstorable = await users({ project_id: projectId, user_ids: [lead.user_id, 'a\u0000b'] }, viewer.api_key);
    expect(unstorable.status, unstorable.text).toBe(400);
    expect(unstorable.body.reason).toContain('user_ids');
    expect((await users({ project_id: projectId, user_ids: 'all' }, viewer.api_key)).status).toBe(400);
  });

  it("the web app's query asks for many ids a part at a time, each within the typed door's URL bound", async () => {
    // 700 UUIDs in one typed-door query would pass the server's 16 KiB header bound (431).
    const ids = [...Array.from({ length: 700 }, () => randomUUID()), ...annotatorIds].sort();
    const web = createClient({ url: server.url, apiKey: viewer.api_key, batch: 'queries' });
    const names = await new QueryClient().fetchQuery(userNamesQuery(web, 1, projectId, ids));
    expect(new Map(names)).toEqual(new Map([...annotators, formerAnnotator].map((who) => [who.user_id, who.username])));
  });

  it('answers the same on the typed door, with the same refusals', async () => {
    const input = { project_id: projectId, user_ids: [...annotatorIds, stranger.user_id] };
    const typed = await client(server, viewer.api_key).projects.users.query(input);
    expect(typed).toEqual((await users(input, viewer.api_key)).body);
    expect(typed.users).toHaveLength(annotatorIds.length);
    await expect(client(server, stranger.api_key).projects.users.query(input)).rejects.toMatchObject({ data: { httpStatus: 403 } });
    await expect(
      client(server, viewer.api_key).projects.users.query({ project_id: projectId, user_ids: Array.from({ length: 1001 }, (_, i) => `u${i}`) }),
    ).rejects.toMatchObject({ data: { httpStatus: 400 } });
  });

  it("lists the members of the project's entity with their roles, by username, to members and viewers; not to annotators or outsiders", async () => {
    const annotator = await createUser(server, { entity: 'acme', role: 'annotator' });
    const expected = [lead, viewer, ...annotators, annotator]
      .map(({ user_id, username }) => ({ user_id, username, role: user_id === viewer.user_id ? 'viewer' : user_id === annotator.user_id ? 'annotator' : 'member' }))
      .sort((a, b) => (a.username < b.username ? -1 : 1));
    for (const key of [viewer.api_key, lead.api_key]) {
      const reply = await rest(server, 'POST', '/projects/members', { key, body: { project_id: projectId } });
      expect(reply.status, reply.text).toBe(200);
      // Former members are gone from it; the stranger of another entity never was in it.
      expect(reply.body).toEqual({ members: expected });
    }
    for (const key of [annotator.api_key, stranger.api_key]) expect((await rest(server, 'POST', '/projects/members', { key, body: { project_id: projectId } })).status).toBe(403);
    expect((await rest(server, 'POST', '/projects/members', { key: lead.api_key, body: { project_id: projectId, limit: 5 } })).status).toBe(400);
  });
});

