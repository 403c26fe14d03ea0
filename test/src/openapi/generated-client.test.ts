import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openApiDocument } from '@loupe/server';
import { answered, documentProblem } from '../harness/api-document.ts';
import { describeEachBackend } from '../harness/backends.ts';
import { basic, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { givePassword } from '../harness/sessions.ts';
import type { paths } from './loupe-api.ts';

// A client generated from the published API document (openapi-typescript types, openapi-fetch
// calls), used as an outside team would use it. It type-checks against the kept types (tsc runs
// over this file), so free-form JSON (`inputs`, `field_schema`) must be expressible in them; at run
// time every answer is checked against the document, and every operation is called until it has
// answered at least once with success and once with an error.

describeEachBackend('a client generated from the API document', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let viewer: CreatedKeyForTest;
  const project_id = 'acme/generated';
  const problems: string[] = [];

  // Every answer is checked against the document; a mismatch is collected and fails the last test.
  const checkedFetch = async (request: Request): Promise<Response> => {
    const response = await fetch(request);
    const text = await response.clone().text();
    const type = response.headers.get('content-type') ?? '';
    const body = text ? (type.includes('json') ? JSON.parse(text) : text) : undefined;
    const url = new URL(request.url);
    const problem = documentProblem(request.method, url.pathname + url.search, response.status, type, body);
    if (problem) problems.push(problem);
    return response;
  };
  const api = (key?: string) =>
    createClient<paths>({ baseUrl: server.url, fetch: checkedFetch, headers: key ? { authorization: basic(key) } : {} });

  beforeAll(async () => {
    answered.clear();
    // Webhooks to loopback (a port nobody listens on: every attempt is refused at once).
    server = await startTestServer(backend, { LOUPE_WEBHOOK_ALLOW_HTTP: 'true', LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    member = await createUser(server, { entity: 'acme', role: 'member' });
    viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
  });
  afterAll(() => server?.stop());

  it('sends free-form JSON and reads calls whose ids need percent-encoding in a path', async () => {
    const client = api(member.api_key);
    const created = await client.POST('/calls/batch/create', {
      body: {
        batch: [
          {
            project_id,
            id: 'ns:1',
            op_name: 'chat',
            started_at: '2026-01-02T03:04:05.678Z',
            inputs: { messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, stream: false, stop: null },
            output: ['any', { json: [1, 2, 3] }],
          },
        ],
      },
    });
    expect(created.response.status).toBe(200);
    expect(created.data?.res[0]?.id).toBe('ns:1');

    // openapi-fetch sends the path parameter encoded: /calls/ns%3A1.
    const read = await client.GET('/calls/{call_id}', { params: { path: { call_id: 'ns:1' }, query: { project_id } } });
    expect(read.response.url).toContain('/calls/ns%3A1?');
    expect(read.response.status).toBe(200);
    expect(read.data?.call).toMatchObject({ id: 'ns:1', inputs: { messages: [{ role: 'user', content: 'hi' }], stop: null } });

    const missing = await client.GET('/calls/{call_id}', { params: { path: { call_id: 'ns:2' }, query: { project_id } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.reason).toBe(`Call "ns:2" does not exist in project ${project_id}.`);

    // A segment that is not valid percent-encoded UTF-8 is the client's error, not a lookup.
    for (const segment of ['ns%3', '%E0%A4%A', '%C3%28']) {
      const bad = await rest(server, 'GET', `/calls/${segment}?project_id=${project_id}`, { key: member.api_key });
      expect(bad.status, segment).toBe(400);
      expect(bad.body).toMatchObject({ code: 'BAD_REQUEST', reason: 'A path segment is not valid percent-encoded UTF-8.' });
    }

    const conflicting = await client.POST('/calls/batch/create', {
      body: { batch: [{ project_id, id: 'ns:1', op_name: 'other', started_at: '2026-01-02T03:04:05.678Z' }] },
    });
    expect(conflicting.response.status).toBe(409);
    expect(conflicting.error).toMatchObject({ code: 'CONFLICT', reason: expect.stringContaining('"ns:1"') });
  });

  it('stores a rubric field whose JSON Schema is free-form', async () => {
    const client = api(member.api_key);
    const spec = await client.POST('/annotation_specs', {
      body: {
        project_id,
        name: 'quality',
        field_schema: { type: 'object', properties: { score: { type: 'integer', minimum: 1, maximum: 5 } }, required: ['score'] },
      },
    });
    expect(spec.response.status).toBe(200);
    const found = await client.POST('/annotation_specs/query', { body: { project_id, names: ['quality'] } });
    expect(found.data?.specs.map((s) => s.ref)).toEqual([spec.data?.ref]);

    const badPattern = await client.POST('/annotation_specs', {
      body: { project_id, name: 'lookaround', field_schema: { type: 'string', pattern: '^(?=a)a$' } },
    });
    expect(badPattern.response.status).toBe(400);
    expect((await client.POST('/annotation_specs/query', { body: { project_id: 'no-slash' } })).response.status).toBe(400);
  });

  it('works a queue from creation to deletion, with the errors each step can answer', async () => {
    const client = api(member.api_key);
    const callIds = ['q:1', 'q:2'];
    await client.POST('/calls/batch/create', {
      body: { batch: callIds.map((id) => ({ project_id, id, op_name: 'chat', started_at: '2026-01-02T03:04:05.678Z' })) },
    });
    expect((await client.POST('/calls/query', { body: { project_id, limit: 10 } })).data?.calls.length).toBeGreaterThanOrEqual(3);
    expect((await client.POST('/calls/query', { body: { project_id, limit: 0 } })).response.status).toBe(400);

    const created = await client.POST('/annotation_queues', { body: { project_id, name: 'review', annotations_per_item: 1 } });
    expect(created.response.status).toBe(200);
    const queue_id = created.data!.id;
    expect((await client.POST('/annotation_queues', { body: { project_id, name: '' } })).response.status).toBe(400);

    const path = { queue_id };
    expect((await client.POST('/annotation_queues/query', { body: { project_id } })).data?.queues.map((q) => q.id)).toContain(queue_id);
    expect((await client.POST('/annotation_queues/query', { body: { project_id, offset: -1 } })).response.status).toBe(400);

    const added = await client.POST('/annotation_queues/{queue_id}/items', { params: { path }, body: { project_id, call_ids: callIds } });
    expect(added.data?.added_count).toBe(2);
    const addedElsewhere = await client.POST('/annotation_queues/{queue_id}/items', {
      params: { path: { queue_id: 'non laboris' } },
      body: { project_id, call_ids: callIds },
    });
    expect(addedElsewhere.response.status).toBe(404);
    expect(addedElsewhere.error?.reason).toContain('"non laboris"');

    const items = await client.POST('/annotation_queues/{queue_id}/items/query', { params: { path }, body: { project_id, include_position: true } });
    expect(items.data?.items).toHaveLength(2);
    expect((await client.POST('/annotation_queues/{queue_id}/items/query', { params: { path: { queue_id: 'gone' } }, body: { project_id } })).response.status).toBe(404);

    const second = items.data!.items[1]!.id;
    const assigned = await client.POST('/annotation_queues/{queue_id}/items/assign', { params: { path }, body: { project_id, item_ids: [second, 'gone'], user_id: member.user_id } });
    expect(assigned.data).toEqual({ assigned_count: 1, missing_item_ids: ['gone'] });
    expect((await client.POST('/annotation_queues/{queue_id}/items/assign', { params: { path }, body: { project_id, item_ids: [], user_id: null } })).response.status).toBe(400);
    const mine = await client.POST('/annotation_queues/mine', { body: { project_id } });
    expect(mine.data?.queues.find((entry) => entry.queue.id === queue_id)).toMatchObject({ remaining_for_me: 2, done_by_me: 0 });
    expect((await client.POST('/annotation_queues/mine', { body: { project_id: 'no-slash' } })).response.status).toBe(400);

    const claimed = await client.POST('/annotation_queues/{queue_id}/items/claim', { params: { path }, body: { project_id } });
    expect(claimed.response.status).toBe(200);
    const item_id = claimed.data!.item!.id;
    expect(item_id).toBe(second); // assigned to the caller: claimed first
    expect((await client.POST('/annotation_queues/{queue_id}/items/claim', { params: { path: { queue_id: 'gone' } }, body: { project_id } })).response.status).toBe(404);

    const progress = await client.POST('/annotation_queues/{queue_id}/items/{item_id}/progress', {
      params: { path: { queue_id, item_id } },
      body: { project_id, annotation_state: 'completed' },
    });
    expect(progress.data?.item.annotation_state).toBe('completed');
    const finished = await client.POST('/annotation_queues/{queue_id}/items/finished', { params: { path }, body: { project_id } });
    expect(finished.data?.finished.map((entry) => [entry.item.id, entry.annotation_state])).toEqual([[item_id, 'completed']]);
    expect((await client.POST('/annotation_queues/{queue_id}/items/finished', { params: { path: { queue_id: 'gone' } }, body: { project_id } })).response.status).toBe(404);
    const unknownItem = await client.POST('/annotation_queues/{queue_id}/items/{item_id}/progress', {
      params: { path: { queue_id, item_id: 'no such item' } },
      body: { project_id, annotation_state: 'completed' },
    });
    expect(unknownItem.response.status).toBe(404);
    expect(unknownItem.error?.reason).toContain('"no such item"');
    const viewerWrites = await api(viewer.api_key).POST('/annotation_queues/{queue_id}/items/{item_id}/progress', {
      params: { path: { queue_id, item_id } },
      body: { project_id, annotation_state: 'skipped' },
    });
    expect(viewerWrites.response.status).toBe(403);

    const stats = await client.POST('/annotation_queues/stats', { body: { project_id, queue_ids: [queue_id] } });
    expect(stats.data?.stats[0]).toMatchObject({ queue_id, completed_items: 1 });
    expect((await client.POST('/annotation_queues/stats', { body: { project_id, queue_ids: ['gone'] } })).response.status).toBe(404);

    const counts = await client.POST('/annotation_queues/{queue_id}/items/annotations', { params: { path }, body: { project_id, item_ids: [item_id] } });
    expect(counts.data?.items).toEqual([{ item_id, annotations_done: 1, annotations_required: 1 }]);
    expect((await client.POST('/annotation_queues/{queue_id}/items/annotations', { params: { path: { queue_id: 'gone' } }, body: { project_id, item_ids: [item_id] } })).response.status).toBe(404);

    // The queue has no scorer specs: agreement is an empty list.
    const agreement = await client.POST('/annotation_queues/{queue_id}/agreement', { params: { path }, body: { project_id } });
    expect(agreement.data?.agreement).toEqual([]);
    expect((await client.POST('/annotation_queues/{queue_id}/agreement', { params: { path: { queue_id: 'gone' } }, body: { project_id } })).response.status).toBe(404);

    const read = await client.GET('/annotation_queues/{queue_id}', { params: { path, query: { project_id } } });
    expect(read.data?.queue.name).toBe('review');
    const anonymous = await api().GET('/annotation_queues/{queue_id}', { params: { path, query: { project_id } } });
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.response.headers.get('www-authenticate')).toBe('Basic realm="loupe"');

    const updated = await client.PUT('/annotation_queues/{queue_id}', { params: { path }, body: { project_id, name: 'review 2' } });
    expect(updated.data?.queue.name).toBe('review 2');
    expect((await client.PUT('/annotation_queues/{queue_id}', { params: { path: { queue_id: 'gone' } }, body: { project_id } })).response.status).toBe(404);

    const removed = await client.DELETE('/annotation_queues/{queue_id}/items/{item_id}', { params: { path: { queue_id, item_id }, query: { project_id } } });
    expect(removed.response.status).toBe(200);
    const removedAgain = await client.DELETE('/annotation_queues/{queue_id}/items/{item_id}', { params: { path: { queue_id, item_id }, query: { project_id } } });
    expect(removedAgain.response.status).toBe(404);

    expect((await client.DELETE('/annotation_queues/{queue_id}', { params: { path, query: { project_id } } })).response.status).toBe(200);
    expect((await client.DELETE('/annotation_queues/{queue_id}', { params: { path, query: { project_id } } })).response.status).toBe(404);
  });

  it('creates, queries, replaces and purges feedback', async () => {
    const client = api(member.api_key);
    const svc_ref = `svc:///${project_id}/call/ns:1`;
    const id = randomUUID();
    const one = await client.POST('/feedback/create', { body: { project_id, id, svc_ref, feedback_type: 'comment', payload: { text: 'fine', tags: ['a'] } } });
    expect(one.response.status).toBe(200);
    const clash = await client.POST('/feedback/create', { body: { project_id, id, svc_ref, feedback_type: 'comment', payload: { text: 'other' } } });
    expect(clash.response.status).toBe(409);

    const batch = await client.POST('/feedback/batch/create', {
      body: { batch: [{ project_id, svc_ref, feedback_type: 'wandb.reaction.1', payload: { emoji: '👍' } }] },
    });
    expect(batch.response.status).toBe(200);
    const badBatch = await client.POST('/feedback/batch/create', { body: { batch: [{ project_id, svc_ref, feedback_type: 'comment', payload: 'not an object' as never }] } });
    expect(badBatch.response.status).toBe(400);

    const queried = await client.POST('/feedback/query', { body: { project_id, limit: 10 } });
    expect(queried.data?.result.length).toBe(2);
    expect((await client.POST('/feedback/query', { body: { project_id: 'x' } })).response.status).toBe(400);

    const replaced = await client.POST('/feedback/replace', {
      body: { project_id, feedback_id: id, svc_ref, feedback_type: 'comment', payload: { text: 'better' } },
    });
    expect(replaced.response.status).toBe(200);
    const replacedAgain = await client.POST('/feedback/replace', {
      body: { project_id, feedback_id: id, svc_ref, feedback_type: 'comment', payload: { text: 'again' } },
    });
    expect(replacedAgain.response.status).toBe(404);

    const purged = await client.POST('/feedback/purge', { body: { project_id, ids: [replaced.data!.id] } });
    expect(purged.data?.deleted_count).toBe(1);
    expect((await client.POST('/feedback/purge', { body: { project_id, ids: [] } })).response.status).toBe(400);
  });

  it('reads the caller, its projects, the names of a project\'s users, its members and the public model list, with their errors', async () => {
    const me = await api(member.api_key).GET('/me');
    expect(me.data?.username).toBe(member.username);
    expect((await api('lp_not_a_key').GET('/me')).response.status).toBe(401);

    const projects = await api(member.api_key).POST('/projects/query', { body: {} });
    expect(projects.response.status).toBe(200);
    expect((await api(member.api_key).POST('/projects/query', { body: { entity: 'someone-else' } })).response.status).toBe(403);

    const users = await api(member.api_key).POST('/projects/users', { body: { project_id, user_ids: [member.user_id, 'no-such-user'] } });
    expect(users.data).toEqual({ users: [{ user_id: member.user_id, username: member.username }] });
    expect((await api(member.api_key).POST('/projects/users', { body: { project_id, user_ids: Array.from({ length: 1001 }, (_, i) => `u${i}`) } })).response.status).toBe(400);

    const members = await api(member.api_key).POST('/projects/members', { body: { project_id } });
    expect(members.data?.members).toContainEqual({ user_id: member.user_id, username: member.username, role: 'member' });
    expect((await api(member.api_key).POST('/projects/members', { body: { project_id: 'someone-else/project' } })).response.status).toBe(403);

    const models = await api().GET('/inference/router/partner/models');
    expect(models.response.status).toBe(200);
    const etag = models.response.headers.get('etag')!;
    const kept = await api().GET('/inference/router/partner/models', { headers: { 'if-none-match': etag } });
    expect(kept.response.status).toBe(304);
    const filtered = await api().GET('/inference/router/partner/models', { params: { query: { feature: 'tools' } } });
    expect(filtered.response.status).toBe(200);
    const badFilter = await api().GET('/inference/router/partner/models', { params: { query: { feature: 'telepathy' as never } } });
    expect(badFilter.response.status).toBe(400);
  });

  it('creates, lists, previews, changes and deletes queue rules, with their errors', async () => {
    const client = api(member.api_key);
    const made = await client.POST('/annotation_queues', { body: { project_id, name: 'ruled' } });
    const queue_id = made.data!.id;
    const path = { queue_id };
    const filter = { op_names: ['chat'], attributes: [{ path: 'gen_ai.request.model', op: 'eq' as const, value: 'gpt-4o' }] };
    const created = await client.POST('/annotation_queues/{queue_id}/rules', { params: { path }, body: { project_id, name: 'chats', trigger: 'call', filter, sample_rate: 0.5 } });
    expect(created.data?.rule).toMatchObject({ name: 'chats', trigger: 'call', filter, sample_rate: 0.5, backfill: null });
    const rule_id = created.data!.rule.id;
    const refused = await client.POST('/annotation_queues/{queue_id}/rules', { params: { path }, body: { project_id, name: 'x', trigger: 'call', filter: { op_names: [] } } });
    expect(refused.response.status).toBe(400);

    const listed = await api(viewer.api_key).POST('/annotation_queues/{queue_id}/rules/query', { params: { path }, body: { project_id } });
    expect(listed.data?.rules.map((rule) => rule.id)).toEqual([rule_id]);
    expect((await client.POST('/annotation_queues/{queue_id}/rules/query', { params: { path: { queue_id: 'gone' } }, body: { project_id } })).response.status).toBe(404);

    const previewed = await client.POST('/annotation_queues/{queue_id}/rules/preview', { params: { path }, body: { project_id, trigger: 'call', filter } });
    expect(previewed.data).toMatchObject({ matching_calls: 0, would_add: 0, scan_limit_reached: false });
    expect((await client.POST('/annotation_queues/{queue_id}/rules/preview', { params: { path: { queue_id: 'gone' } }, body: { project_id, trigger: 'call', filter } })).response.status).toBe(404);

    const changed = await client.PUT('/annotation_queues/{queue_id}/rules/{rule_id}', { params: { path: { queue_id, rule_id } }, body: { project_id, enabled: false } });
    expect(changed.data?.rule.enabled).toBe(false);
    expect((await client.PUT('/annotation_queues/{queue_id}/rules/{rule_id}', { params: { path: { queue_id, rule_id: 'gone' } }, body: { project_id } })).response.status).toBe(404);

    const deleted = await client.DELETE('/annotation_queues/{queue_id}/rules/{rule_id}', { params: { path: { queue_id, rule_id }, query: { project_id } } });
    expect(deleted.data?.rule.id).toBe(rule_id);
    expect((await client.DELETE('/annotation_queues/{queue_id}/rules/{rule_id}', { params: { path: { queue_id, rule_id }, query: { project_id } } })).response.status).toBe(404);
  });

  it('manages webhooks and their deliveries, with their errors', async () => {
    const client = api(member.api_key);
    const url = 'http://127.0.0.1:9/hook';
    const created = await client.POST('/webhooks', { body: { project_id, url, events: ['feedback.created'] } });
    expect(created.response.status).toBe(200);
    const id = created.data!.webhook.id;
    expect((await client.POST('/webhooks', { body: { project_id, url: 'ftp://example.com/', events: ['*'] } })).response.status).toBe(400);
    expect((await client.POST('/webhooks/query', { body: { project_id } })).data?.webhooks.map((w) => w.id)).toEqual([id]);
    expect((await api(viewer.api_key).POST('/webhooks/query', { body: { project_id } })).response.status).toBe(403);
    const missing = { path: { id: randomUUID() } };
    expect((await client.PUT('/webhooks/{id}', { params: { path: { id } }, body: { project_id, description: 'ci' } })).data?.webhook.description).toBe('ci');
    expect((await client.PUT('/webhooks/{id}', { params: missing, body: { project_id } })).response.status).toBe(404);
    expect((await client.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } }, body: { project_id } })).response.status).toBe(200);
    expect((await client.POST('/webhooks/{id}/rotate-secret', { params: missing, body: { project_id } })).response.status).toBe(404);
    const tested = await client.POST('/webhooks/{id}/test', { params: { path: { id } }, body: { project_id } });
    expect(tested.response.status).toBe(200);
    expect((await client.POST('/webhooks/{id}/test', { params: missing, body: { project_id } })).response.status).toBe(404);
    // The attempt is refused by the closed port at once; then the delivery waits for its retry.
    let deliveries = await client.POST('/webhooks/{id}/deliveries/query', { params: { path: { id } }, body: { project_id } });
    for (let i = 0; i < 100 && deliveries.data!.deliveries[0]!.attempts === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      deliveries = await client.POST('/webhooks/{id}/deliveries/query', { params: { path: { id } }, body: { project_id } });
    }
    expect(deliveries.data!.deliveries[0]).toMatchObject({ type: 'webhook.test', attempts: 1, last_error: 'the request failed: ECONNREFUSED' });
    expect((await client.POST('/webhooks/{id}/deliveries/query', { params: missing, body: { project_id } })).response.status).toBe(404);
    const deliveryId = tested.data!.delivery.id;
    const retried = await client.POST('/webhooks/{id}/deliveries/{delivery_id}/retry', { params: { path: { id, delivery_id: deliveryId } }, body: { project_id } });
    expect(retried.response.status).toBe(200);
    const unknown = await client.POST('/webhooks/{id}/deliveries/{delivery_id}/retry', { params: { path: { id, delivery_id: randomUUID() } }, body: { project_id } });
    expect(unknown.response.status).toBe(404);
    expect((await client.DELETE('/webhooks/{id}', { params: { path: { id }, query: { project_id } } })).response.status).toBe(200);
    expect((await client.DELETE('/webhooks/{id}', { params: { path: { id }, query: { project_id } } })).response.status).toBe(404);
  });

  it('signs in and out, invites, accepts, manages members, own keys and reads the audit log, with their errors', async () => {
    const admin = await createUser(server, { entity: 'acme', role: 'admin' });
    const password = 'a generated client passphrase';
    await givePassword(server, admin.username, password);
    const anonymous = api();
    expect((await anonymous.GET('/auth/methods')).data).toEqual({ password: true, single_sign_on: false });
    // The methods take no parameters: an unknown one is refused.
    expect((await anonymous.GET('/auth/methods', { params: { query: { x: '1' } } } as never)).response.status).toBe(400);
    expect((await anonymous.POST('/auth/sign-in', { body: { username: admin.username, password: 'not the password!' } })).response.status).toBe(401);
    const signedIn = await anonymous.POST('/auth/sign-in', { body: { username: admin.username, password } });
    expect(signedIn.data?.user.user_id).toBe(admin.user_id);
    const cookie = signedIn.response.headers.get('set-cookie')!.split(';')[0]!;
    const browser = createClient<paths>({ baseUrl: server.url, fetch: checkedFetch, headers: { cookie, origin: server.url } });
    const entity = { path: { entity: 'acme' } };

    const invited = await browser.POST('/entities/{entity}/invitations', { params: entity, body: { role: 'annotator' } });
    expect(invited.data?.invitation.role).toBe('annotator');
    expect((await api(viewer.api_key).POST('/entities/{entity}/invitations', { params: entity, body: { role: 'admin' } })).response.status).toBe(403);
    expect((await browser.POST('/entities/{entity}/invitations/query', { params: entity })).data?.invitations.length).toBeGreaterThan(0);
    expect((await api(viewer.api_key).POST('/entities/{entity}/invitations/query', { params: entity })).response.status).toBe(403);
    const token = new URL(invited.data!.invitation.url).hash.slice('#token='.length);
    const accepted = await anonymous.POST('/auth/accept-invitation', { body: { token, username: `generated-${backend}`, password } });
    expect(accepted.data?.user.memberships).toEqual([{ entity: 'acme', role: 'annotator' }]);
    expect((await anonymous.POST('/auth/accept-invitation', { body: { token, username: `generated-again-${backend}`, password } })).response.status).toBe(400);
    const revocable = (await browser.POST('/entities/{entity}/invitations', { params: entity, body: { role: 'viewer' } })).data!.invitation.id;
    expect((await browser.DELETE('/entities/{entity}/invitations/{id}', { params: { path: { entity: 'acme', id: revocable } } })).data?.invitation.state).toBe('revoked');
    expect((await browser.DELETE('/entities/{entity}/invitations/{id}', { params: { path: { entity: 'acme', id: randomUUID() } } })).response.status).toBe(404);

    const newcomer = accepted.data!.user.user_id;
    expect((await api(viewer.api_key).POST('/entities/{entity}/members/query', { params: entity })).data?.members.length).toBeGreaterThan(2);
    expect((await browser.POST('/entities/{entity}/members/query', { params: { path: { entity: 'elsewhere' } } })).response.status).toBe(403);
    expect((await browser.PUT('/entities/{entity}/members/{user_id}', { params: { path: { entity: 'acme', user_id: newcomer } }, body: { role: 'viewer' } })).data?.member.role).toBe('viewer');
    expect((await browser.PUT('/entities/{entity}/members/{user_id}', { params: { path: { entity: 'acme', user_id: randomUUID() } }, body: { role: 'viewer' } })).response.status).toBe(404);
    expect((await browser.DELETE('/entities/{entity}/members/{user_id}', { params: { path: { entity: 'acme', user_id: newcomer } } })).response.status).toBe(200);
    expect((await browser.DELETE('/entities/{entity}/members/{user_id}', { params: { path: { entity: 'acme', user_id: admin.user_id } } })).response.status).toBe(400);

    const key = await browser.POST('/me/api-keys', { body: { name: 'generated' } });
    expect(key.data?.key).toMatch(/^lp_/);
    expect((await browser.POST('/me/api-keys', { body: { name: '' } })).response.status).toBe(400);
    expect((await browser.POST('/me/api-keys/query', { body: {} })).data?.api_keys.map((k) => k.id)).toContain(key.data!.api_key.id);
    expect((await anonymous.POST('/me/api-keys/query', { body: {} })).response.status).toBe(401);
    expect((await browser.DELETE('/me/api-keys/{id}', { params: { path: { id: key.data!.api_key.id } } })).response.status).toBe(200);
    expect((await browser.DELETE('/me/api-keys/{id}', { params: { path: { id: key.data!.api_key.id } } })).response.status).toBe(404);

    expect((await browser.POST('/entities/{entity}/audit/query', { params: entity, body: { limit: 5 } })).data?.events).toHaveLength(5);
    expect((await api(viewer.api_key).POST('/entities/{entity}/audit/query', { params: entity, body: {} })).response.status).toBe(403);

    expect((await browser.POST('/auth/sign-out', { body: {} })).data).toEqual({ signed_out: true });
    expect((await browser.POST('/auth/sign-out', { body: {} })).response.status).toBe(401);
  });

  it('saw every operation answer with success and with an error, each as the document describes it', () => {
    expect(problems).toEqual([]);
    const missing: string[] = [];
    for (const item of Object.values(openApiDocument().paths ?? {})) {
      for (const operation of Object.values(item ?? {})) {
        const id = (operation as { operationId: string }).operationId;
        const statuses = [...answered].filter((a) => a.startsWith(`${id} `)).map((a) => Number(a.split(' ')[1]));
        if (!statuses.some((s) => s < 400)) missing.push(`${id}: no success`);
        if (!statuses.some((s) => s >= 400)) missing.push(`${id}: no error`);
      }
    }
    expect(missing).toEqual([]);
  });
});
