import { addMember, unitOfWork } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { batchCreate, createSpec, freeForm } from '../harness/feedback.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createQueue, createSomeCalls, projectQuery, TIMESTAMP } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

describeEachBackend('projects', (backend) => {
  let server: TestServer;
  let alice: CreatedKeyForTest; // member of acme, viewer of beta
  let carol: CreatedKeyForTest; // member of beta
  let bob: CreatedKeyForTest; // member of other
  let alphaSpecAt: string;
  let startedAt: string;
  beforeAll(async () => {
    server = await startTestServer(backend);
    alice = await createUser(server, { entity: 'acme', role: 'member' });
    await addMember(unitOfWork(server.server.services.orm), alice.username, 'beta', 'viewer');
    carol = await createUser(server, { entity: 'beta', role: 'member' });
    bob = await createUser(server, { entity: 'other', role: 'member' });

    startedAt = new Date().toISOString();
    alphaSpecAt = (await createSpec(server, alice.api_key, 'acme/alpha', 'score', { type: 'integer', minimum: 1, maximum: 5 })).created_at;
    await createSomeCalls(server, alice.api_key, 'acme/zeta', 3);
    await createQueue(server, alice.api_key, 'acme/zeta');
    const gone = await createQueue(server, alice.api_key, 'acme/zeta');
    expect((await rest(server, 'DELETE', `/annotation_queues/${gone}${projectQuery('acme/zeta')}`, { key: alice.api_key })).status).toBe(200);
    const feedback = await batchCreate(server, alice.api_key, [freeForm('acme/zeta'), freeForm('acme/zeta')]);
    expect(feedback.status, feedback.text).toBe(200);
    await createSomeCalls(server, alice.api_key, 'acme/Zed', 1);
    // A project whose only record is a deleted queue holds no data.
    const only = await createQueue(server, alice.api_key, 'acme/emptied');
    expect((await rest(server, 'DELETE', `/annotation_queues/${only}${projectQuery('acme/emptied')}`, { key: alice.api_key })).status).toBe(200);
    await createSomeCalls(server, carol.api_key, 'beta/b1', 2);
    await createSomeCalls(server, bob.api_key, 'other/x', 1);
  });
  afterAll(() => server?.stop());

  const queryProjects = (body: Record<string, unknown>, key?: string) => rest(server, 'POST', '/projects/query', { body, ...(key ? { key } : {}) });

  it("lists the projects of every entity of the caller (any role) that hold live data, in project_id order, with live counts", async () => {
    const reply = await queryProjects({}, alice.api_key);
    expect(reply.status, reply.text).toBe(200);
    const projects = reply.body.projects as any[];
    expect(projects.map((p) => p.project_id)).toEqual(['acme/Zed', 'acme/alpha', 'acme/zeta', 'beta/b1']);
    expect(projects.map(({ created_at: _, ...rest }) => rest)).toEqual([
      { project_id: 'acme/Zed', entity: 'acme', name: 'Zed', counts: { calls: 1, queues: 0, feedback: 0 } },
      { project_id: 'acme/alpha', entity: 'acme', name: 'alpha', counts: { calls: 0, queues: 0, feedback: 0 } },
      { project_id: 'acme/zeta', entity: 'acme', name: 'zeta', counts: { calls: 3, queues: 1, feedback: 2 } },
      { project_id: 'beta/b1', entity: 'beta', name: 'b1', counts: { calls: 2, queues: 0, feedback: 0 } },
    ]);
    for (const project of projects) {
      expect(project.created_at).toMatch(TIMESTAMP);
      expect(project.created_at >= startedAt.slice(0, 19)).toBe(true);
    }
    expect(projects[1].created_at).toBe(alphaSpecAt);
  });

  it('narrows to one of the caller\'s entities, refuses another entity with 403 and a bad name with 400', async () => {
    const beta = await queryProjects({ entity: 'beta' }, alice.api_key);
    expect(beta.status, beta.text).toBe(200);
    expect(beta.body.projects.map((p: any) => p.project_id)).toEqual(['beta/b1']);

    const other = await queryProjects({ entity: 'other' }, alice.api_key);
    expect(other.status, other.text).toBe(403);
    expect(other.body.reason).toMatch(/other/);
    expect((await queryProjects({ entity: 'no/slash' }, alice.api_key)).status).toBe(400);
    expect((await queryProjects({ entities: ['acme'] }, alice.api_key)).status).toBe(400);
    expect((await queryProjects({})).status).toBe(401);
  });

  it('shows each caller only its own entities; a user of no entity gets an empty list', async () => {
    expect((await queryProjects({}, bob.api_key)).body.projects.map((p: any) => p.project_id)).toEqual(['other/x']);
    const loner = await createUser(server);
    expect((await queryProjects({}, loner.api_key)).body).toEqual({ projects: [] });
  });

  it('answers the same on the typed door', async () => {
    const typed = await client(server, alice.api_key).projects.query.query({});
    expect(typed).toEqual((await queryProjects({}, alice.api_key)).body);
  });
});
