import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { operationTemplate } from '../harness/operation-paths.ts';

// Every operation on a project's data checks the caller's access to that project in one place
// (the project procedure builders of api/project-procedures.ts). This test holds every such
// operation of the API document to it: a member of another entity is refused (403) on each, a
// viewer on each write, and a viewer reads; the list of operations is checked against the document,
// so an operation added without its row here fails.

type Access = 'read' | 'write';
type Request = { method: string; path: string; body?: unknown; access: Access };

const ENTITY = 'access';
const PROJECT = `${ENTITY}/main`;

describeEachBackend('project access on every operation', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;
  let requests: Request[];

  beforeAll(async () => {
    // Webhooks to loopback (a closed port), so that one can be made here.
    server = await startTestServer(backend, { LOUPE_WEBHOOK_ALLOW_HTTP: 'true', LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    owner = await createUser(server, { entity: ENTITY, role: 'member' });
    viewer = await createUser(server, { entity: ENTITY, role: 'viewer' });
    outsider = await createUser(server, { entity: 'elsewhere', role: 'admin' });

    const callId = `call-${randomUUID()}`;
    const callRef = `svc:///${PROJECT}/call/${callId}`;
    const as = (method: string, path: string, body?: unknown) => rest(server, method, path, { key: owner.api_key, body });
    expect((await as('POST', '/calls/batch/create', { batch: [call(callId)] })).status).toBe(200);
    const spec = (await as('POST', '/annotation_specs', { project_id: PROJECT, name: 'correct', field_schema: { type: 'boolean' } })).body.ref as string;
    const queue = (await as('POST', '/annotation_queues', { project_id: PROJECT, name: 'q', scorer_refs: [spec] })).body.id as string;
    expect((await as('POST', `/annotation_queues/${queue}/items`, { project_id: PROJECT, call_ids: [callId] })).status).toBe(200);
    const items = await as('POST', `/annotation_queues/${queue}/items/query`, { project_id: PROJECT });
    const item = items.body.items[0].id as string;
    const feedback = { project_id: PROJECT, svc_ref: callRef, feedback_type: 'svc.reaction.1', payload: { emoji: '👍' } };
    const stored = (await as('POST', '/feedback/create', feedback)).body.id as string;
    const q = `project_id=${encodeURIComponent(PROJECT)}`;
    const rule = (await as('POST', `/annotation_queues/${queue}/rules`, { project_id: PROJECT, name: 'r', trigger: 'call', filter: { op_names: ['none'] } })).body.rule.id as string;
    const hook = { project_id: PROJECT, url: 'http://127.0.0.1:9/hook', events: ['*'] };
    const webhook = (await as('POST', '/webhooks', hook)).body.webhook.id as string;
    const delivery = (await as('POST', `/webhooks/${webhook}/test`, { project_id: PROJECT })).body.delivery.id as string;

    requests = [
      { method: 'POST', path: '/calls/batch/create', body: { batch: [call(`call-${randomUUID()}`)] }, access: 'write' },
      { method: 'GET', path: `/calls/${callId}?${q}`, access: 'read' },
      { method: 'POST', path: '/calls/query', body: { project_id: PROJECT }, access: 'read' },
      { method: 'POST', path: '/annotation_specs', body: { project_id: PROJECT, name: 'other', field_schema: { type: 'integer' } }, access: 'write' },
      { method: 'POST', path: '/annotation_specs/query', body: { project_id: PROJECT, names: ['correct'] }, access: 'read' },
      { method: 'POST', path: '/annotation_queues', body: { project_id: PROJECT, name: 'another' }, access: 'write' },
      { method: 'POST', path: '/annotation_queues/query', body: { project_id: PROJECT }, access: 'read' },
      { method: 'POST', path: '/annotation_queues/stats', body: { project_id: PROJECT, queue_ids: [queue] }, access: 'read' },
      { method: 'POST', path: '/annotation_queues/mine', body: { project_id: PROJECT }, access: 'read' },
      { method: 'GET', path: `/annotation_queues/${queue}?${q}`, access: 'read' },
      { method: 'PUT', path: `/annotation_queues/${queue}`, body: { project_id: PROJECT, name: 'renamed' }, access: 'write' },
      { method: 'DELETE', path: `/annotation_queues/${queue}?${q}`, access: 'write' },
      { method: 'POST', path: `/annotation_queues/${queue}/agreement`, body: { project_id: PROJECT }, access: 'read' },
      { method: 'POST', path: `/annotation_queues/${queue}/items`, body: { project_id: PROJECT, call_ids: [callId] }, access: 'write' },
      { method: 'POST', path: `/annotation_queues/${queue}/items/query`, body: { project_id: PROJECT }, access: 'read' },
      { method: 'POST', path: `/annotation_queues/${queue}/items/claim`, body: { project_id: PROJECT }, access: 'write' },
      { method: 'POST', path: `/annotation_queues/${queue}/items/assign`, body: { project_id: PROJECT, item_ids: [item], user_id: owner.user_id }, access: 'write' },
      { method: 'POST', path: `/annotation_queues/${queue}/items/annotations`, body: { project_id: PROJECT, item_ids: [item] }, access: 'read' },
      { method: 'POST', path: `/annotation_queues/${queue}/items/finished`, body: { project_id: PROJECT }, access: 'read' },
      { method: 'POST', path: `/annotation_queues/${queue}/items/${item}/progress`, body: { project_id: PROJECT, annotation_state: 'completed' }, access: 'write' },
      { method: 'DELETE', path: `/annotation_queues/${queue}/items/${item}?${q}`, access: 'write' },
      { method: 'POST', path: `/annotation_queues/${queue}/rules`, body: { project_id: PROJECT, name: 'r2', trigger: 'call', filter: {} }, access: 'write' },
      { method: 'POST', path: `/annotation_queues/${queue}/rules/query`, body: { project_id: PROJECT }, access: 'read' },
      { method: 'POST', path: `/annotation_queues/${queue}/rules/preview`, body: { project_id: PROJECT, trigger: 'call', filter: {} }, access: 'read' },
      { method: 'PUT', path: `/annotation_queues/${queue}/rules/${rule}`, body: { project_id: PROJECT, enabled: false }, access: 'write' },
      { method: 'DELETE', path: `/annotation_queues/${queue}/rules/${rule}?${q}`, access: 'write' },
      { method: 'POST', path: '/feedback/batch/create', body: { batch: [feedback] }, access: 'write' },
      { method: 'POST', path: '/feedback/create', body: feedback, access: 'write' },
      { method: 'POST', path: '/feedback/query', body: { project_id: PROJECT }, access: 'read' },
      { method: 'POST', path: '/feedback/purge', body: { project_id: PROJECT, ids: [stored] }, access: 'write' },
      { method: 'POST', path: '/feedback/replace', body: { ...feedback, feedback_id: stored }, access: 'write' },
      { method: 'POST', path: '/projects/users', body: { project_id: PROJECT, user_ids: [owner.user_id] }, access: 'read' },
      { method: 'POST', path: '/projects/members', body: { project_id: PROJECT }, access: 'read' },
      // Webhooks are members' business, reads too: a url may carry a receiver's credentials.
      { method: 'POST', path: '/webhooks', body: hook, access: 'write' },
      { method: 'POST', path: '/webhooks/query', body: { project_id: PROJECT }, access: 'write' },
      { method: 'PUT', path: `/webhooks/${webhook}`, body: { project_id: PROJECT, description: 'x' }, access: 'write' },
      { method: 'DELETE', path: `/webhooks/${webhook}?${q}`, access: 'write' },
      { method: 'POST', path: `/webhooks/${webhook}/rotate-secret`, body: { project_id: PROJECT }, access: 'write' },
      { method: 'POST', path: `/webhooks/${webhook}/test`, body: { project_id: PROJECT }, access: 'write' },
      { method: 'POST', path: `/webhooks/${webhook}/deliveries/query`, body: { project_id: PROJECT }, access: 'write' },
      { method: 'POST', path: `/webhooks/${webhook}/deliveries/${delivery}/retry`, body: { project_id: PROJECT }, access: 'write' },
    ];
  });
  afterAll(() => server?.stop());

  it('has a request for every operation of the API document that names a project', async () => {
    const document = (await rest(server, 'GET', '/openapi.json')).body as OpenApi;
    const scoped = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => namesProject(operation))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    const covered = requests.map((request) => `${request.method} ${operationTemplate(request.path)}`);
    expect(new Set(covered)).toEqual(new Set(scoped));
  });

  it('refuses a member of another entity on every one of them (403), before anything is written', async () => {
    for (const request of requests) {
      const reply = await rest(server, request.method, request.path, { key: outsider.api_key, body: request.body });
      expect(reply.status, `${request.method} ${request.path}: ${reply.text}`).toBe(403);
      expect(reply.body.reason).toBe(`You are not a member of entity "${ENTITY}".`);
    }
    await expectNothingChanged();
  });

  it('refuses a viewer every write (403) and answers every read', async () => {
    for (const request of requests) {
      const reply = await rest(server, request.method, request.path, { key: viewer.api_key, body: request.body });
      if (request.access === 'write') {
        expect(reply.status, `${request.method} ${request.path}: ${reply.text}`).toBe(403);
        expect(reply.body.reason).toBe(`Your role in entity "${ENTITY}" is viewer, which cannot write.`);
      } else {
        expect(reply.status, `${request.method} ${request.path}: ${reply.text}`).toBe(200);
      }
    }
    await expectNothingChanged();
  });

  it('checks a batch against the project of each of its elements', async () => {
    const mixed = { batch: [call(`call-${randomUUID()}`), { ...call(`call-${randomUUID()}`), project_id: 'elsewhere/main' }] };
    const reply = await rest(server, 'POST', '/calls/batch/create', { key: owner.api_key, body: mixed });
    expect(reply.status).toBe(403);
    expect(reply.body.reason).toBe('You are not a member of entity "elsewhere".');
    const stored = await rest(server, 'POST', '/calls/query', { key: owner.api_key, body: { project_id: PROJECT } });
    expect(stored.body.calls).toHaveLength(1);
  });

  /** The owner's view of the project is what its set-up left: one call, one queue with its item, one feedback record. */
  async function expectNothingChanged() {
    const as = (path: string, body: unknown) => rest(server, 'POST', path, { key: owner.api_key, body });
    expect((await as('/calls/query', { project_id: PROJECT })).body.calls).toHaveLength(1);
    const queues = (await as('/annotation_queues/query', { project_id: PROJECT })).body.queues;
    expect(queues.map((queue: { name: string }) => queue.name)).toEqual(['q']);
    expect((await as('/feedback/query', { project_id: PROJECT })).body.result).toHaveLength(1);
    const items = (await as(`/annotation_queues/${queues[0].id}/items/query`, { project_id: PROJECT })).body.items;
    expect(items.map((item: { annotation_state: string }) => item.annotation_state)).toEqual(['unstarted']);
    expect(items.map((item: { assigned_user_id: string | null }) => item.assigned_user_id)).toEqual([null]);
  }
});

type OpenApi = { paths: Record<string, Record<string, Operation>> };
type Operation = { parameters?: { name: string }[]; requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> } };

/** Whether an operation's input has a `project_id`, or a batch whose elements have one. */
function namesProject(operation: Operation): boolean {
  if (operation.parameters?.some((parameter) => parameter.name === 'project_id')) return true;
  const properties = operation.requestBody?.content['application/json']?.schema.properties ?? {};
  return 'project_id' in properties || 'batch' in properties;
}

/** `/annotation_queues/abc/items?x` → `/annotation_queues/{queue_id}/items`: the document's path of a request. */

function call(id: string) {
  return { project_id: PROJECT, id, op_name: 'chat', started_at: '2026-01-01T00:00:00.000Z', inputs: { q: 'hi' }, output: { a: 'hello' } };
}
