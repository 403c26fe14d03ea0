import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { callRefOf, createSpec } from '../harness/feedback.ts';
import { client, createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { addItems, claim, createCalls, createQueue, progress, projectQuery, queryItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { operationTemplate } from '../harness/operation-paths.ts';
import { setPassword } from '@loupe/server';

// The annotator role (contract 5.11) through every door: an annotator tries each operation of the
// API document. They claim, annotate and post progress in the queues open to them (open queues,
// assigned queues naming them), and read what that work needs — those queues, their items and
// stats, the calls of their items, the specs, their own feedback — blind to every other
// annotator's work; every other write is refused (403), and so are agreement and the queues that
// are not open to them. The list of requests is checked against the document, so an operation
// added without its row here fails.

type Expect = 'allowed' | 'refused';
type Request = { method: string; path: string; body?: unknown; expect: Expect; why: string };

const ENTITY = 'blind';
const PROJECT = `${ENTITY}/main`;
/** What the other annotator wrote: it must appear in no answer the annotator gets. */
const SECRET = 'the-other-annotators-note';

describeEachBackend('the annotator role on every operation', (backend) => {
  let server: TestServer;
  let owner: CreatedKeyForTest;
  let annotator: CreatedKeyForTest;
  let other: CreatedKeyForTest;
  let requests: Request[];
  let openQueue: string;
  let closedQueue: string;
  let openItems: { id: string; call_id: string }[];
  let closedItem: string;
  let ownFeedback: string;
  let othersFeedback: string;
  let specRef: string;

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_WEBHOOK_ALLOW_HTTP: 'true', LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    owner = await createUser(server, { entity: ENTITY, role: 'member' });
    annotator = await createUser(server, { entity: ENTITY, role: 'annotator' });
    other = await createUser(server, { entity: ENTITY, role: 'annotator' });

    const as = (user: CreatedKeyForTest, method: string, path: string, body?: unknown) => rest(server, method, path, { key: user.api_key, body });
    await createCalls(server, owner.api_key, PROJECT, [{ id: 'c1' }, { id: 'c2' }, { id: 'c3' }, { id: 'loose' }]);
    specRef = (await createSpec(server, owner.api_key, PROJECT, 'ok', { type: 'boolean' })).ref;
    openQueue = await createQueue(server, owner.api_key, PROJECT, { name: 'open one', scorer_refs: [specRef], annotations_per_item: 2 });
    closedQueue = await createQueue(server, owner.api_key, PROJECT, { name: 'not yours', access: 'assigned', assignees: [other.user_id] });
    await addItems(server, owner.api_key, PROJECT, openQueue, ['c1', 'c2']);
    await addItems(server, owner.api_key, PROJECT, closedQueue, ['c3']);
    openItems = await queryItems(server, owner.api_key, PROJECT, openQueue);
    closedItem = (await queryItems(server, owner.api_key, PROJECT, closedQueue))[0]!.id;

    // Both annotators work c1; the other's record is the later one, so the item's shown state is theirs.
    expect((await claim(server, annotator.api_key, PROJECT, openQueue)).body.item.id).toBe(openItems[0]!.id);
    expect((await claim(server, other.api_key, PROJECT, openQueue)).body.item.id).toBe(openItems[0]!.id);
    expect((await progress(server, other.api_key, PROJECT, openQueue, openItems[0]!.id, 'completed')).status).toBe(200);
    expect((await claim(server, other.api_key, PROJECT, closedQueue)).status).toBe(200);
    const annotation = (user: string, value: boolean, note?: string) => ({
      project_id: PROJECT, svc_ref: callRefOf(PROJECT, 'c1'), feedback_type: 'svc.annotation.ok', annotation_ref: specRef, queue_id: openQueue,
      payload: { value, ...(note ? { note } : {}) }, creator: user,
    });
    othersFeedback = (await as(other, 'POST', '/feedback/create', annotation('other', false, SECRET))).body.id;
    ownFeedback = (await as(annotator, 'POST', '/feedback/create', annotation('me', true))).body.id;
    expect(othersFeedback && ownFeedback).toBeTruthy();
    expect((await as(owner, 'POST', '/feedback/create', { project_id: PROJECT, svc_ref: callRefOf(PROJECT, 'c1'), feedback_type: 'svc.note.1', payload: { note: SECRET } })).status).toBe(200);

    const q = `project_id=${encodeURIComponent(PROJECT)}`;
    const mine = { project_id: PROJECT, svc_ref: callRefOf(PROJECT, 'c1'), feedback_type: 'svc.annotation.ok', annotation_ref: specRef, queue_id: openQueue, payload: { value: true } };
    const [c1, c2] = openItems as [{ id: string; call_id: string }, { id: string; call_id: string }];
    const ruleBody = { project_id: PROJECT, name: 'r', trigger: 'call', filter: { op_names: ['none'] } };
    const rule = (await as(owner, 'POST', `/annotation_queues/${openQueue}/rules`, ruleBody)).body.rule.id as string;
    const hook = { project_id: PROJECT, url: 'http://127.0.0.1:9/hook', events: ['*'] };
    const webhook = (await as(owner, 'POST', '/webhooks', hook)).body.webhook.id as string;
    const delivery = (await as(owner, 'POST', `/webhooks/${webhook}/test`, { project_id: PROJECT })).body.delivery.id as string;
    // People (contract 5.12): the annotator has a password and a second key of their own; an admin
    // of another entity invites a new account.
    const password = 'annotator passphrase 1';
    await setPassword(server.server.services.orm.em, { username: annotator.username, password });
    const ownKey = (await as(annotator, 'POST', '/me/api-keys', { name: 'second' })).body.api_key.id as string;
    const elsewhere = await createUser(server, { entity: 'blind-elsewhere', role: 'admin' });
    const invitationUrl = (await as(elsewhere, 'POST', '/entities/blind-elsewhere/invitations', { role: 'member' })).body.invitation.url as string;
    const token = new URL(invitationUrl).hash.replace('#token=', '');
    requests = [
      { method: 'POST', path: '/calls/batch/create', body: { batch: [{ project_id: PROJECT, id: `x-${randomUUID()}`, op_name: 'chat', started_at: '2026-01-01T00:00:00.000Z' }] }, expect: 'refused', why: 'stores calls' },
      { method: 'GET', path: `/calls/c1?${q}`, expect: 'allowed', why: 'the call of an item of an open queue' },
      { method: 'GET', path: `/calls/c3?${q}`, expect: 'refused', why: 'the call of an item of a queue assigned to another' },
      { method: 'GET', path: `/calls/loose?${q}`, expect: 'refused', why: 'a call in no queue' },
      { method: 'POST', path: '/calls/query', body: { project_id: PROJECT }, expect: 'allowed', why: 'the calls of the items of open queues' },
      { method: 'POST', path: '/annotation_specs', body: { project_id: PROJECT, name: 'other', field_schema: { type: 'integer' } }, expect: 'refused', why: 'stores a spec' },
      { method: 'POST', path: '/annotation_specs/query', body: { project_id: PROJECT, names: ['ok'] }, expect: 'allowed', why: 'the rubric' },
      { method: 'POST', path: '/annotation_queues', body: { project_id: PROJECT, name: 'another' }, expect: 'refused', why: 'creates a queue' },
      { method: 'POST', path: '/annotation_queues/query', body: { project_id: PROJECT }, expect: 'allowed', why: 'the queues open to them' },
      { method: 'POST', path: '/annotation_queues/mine', body: {}, expect: 'allowed', why: 'their home page' },
      { method: 'POST', path: '/annotation_queues/stats', body: { project_id: PROJECT, queue_ids: [openQueue] }, expect: 'allowed', why: 'counts of an open queue' },
      { method: 'POST', path: '/annotation_queues/stats', body: { project_id: PROJECT, queue_ids: [openQueue, closedQueue] }, expect: 'refused', why: 'a queue assigned to another' },
      { method: 'GET', path: `/annotation_queues/${openQueue}?${q}`, expect: 'allowed', why: 'an open queue' },
      { method: 'GET', path: `/annotation_queues/${closedQueue}?${q}`, expect: 'refused', why: 'a queue assigned to another' },
      { method: 'PUT', path: `/annotation_queues/${openQueue}`, body: { project_id: PROJECT, name: 'renamed' }, expect: 'refused', why: 'changes a queue' },
      { method: 'DELETE', path: `/annotation_queues/${openQueue}?${q}`, expect: 'refused', why: 'deletes a queue' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/agreement`, body: { project_id: PROJECT }, expect: 'refused', why: 'compares annotators' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/items`, body: { project_id: PROJECT, call_ids: ['loose'] }, expect: 'refused', why: 'adds items' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/items/query`, body: { project_id: PROJECT }, expect: 'allowed', why: 'the items of an open queue' },
      { method: 'POST', path: `/annotation_queues/${closedQueue}/items/query`, body: { project_id: PROJECT }, expect: 'refused', why: 'a queue assigned to another' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/items/assign`, body: { project_id: PROJECT, item_ids: [c2.id], user_id: annotator.user_id }, expect: 'refused', why: 'assigns items' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/items/annotations`, body: { project_id: PROJECT, item_ids: [c1.id] }, expect: 'allowed', why: 'counts' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/items/claim`, body: { project_id: PROJECT }, expect: 'allowed', why: 'claims in an open queue' },
      { method: 'POST', path: `/annotation_queues/${closedQueue}/items/claim`, body: { project_id: PROJECT }, expect: 'refused', why: 'a queue assigned to another' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/items/finished`, body: { project_id: PROJECT }, expect: 'allowed', why: 'their own finished items' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/items/${c1.id}/progress`, body: { project_id: PROJECT, annotation_state: 'completed' }, expect: 'allowed', why: 'their progress' },
      { method: 'POST', path: `/annotation_queues/${closedQueue}/items/${closedItem}/progress`, body: { project_id: PROJECT, annotation_state: 'completed' }, expect: 'refused', why: 'a queue assigned to another' },
      { method: 'DELETE', path: `/annotation_queues/${openQueue}/items/${c2.id}?${q}`, expect: 'refused', why: 'removes an item' },
      { method: 'POST', path: '/feedback/batch/create', body: { batch: [mine] }, expect: 'allowed', why: 'annotates in an open queue' },
      { method: 'POST', path: '/feedback/batch/create', body: { batch: [{ ...mine, queue_id: undefined }] }, expect: 'refused', why: 'feedback outside the queues' },
      { method: 'POST', path: '/feedback/batch/create', body: { batch: [{ ...mine, feedback_type: 'svc.reaction.1', annotation_ref: undefined, queue_id: closedQueue, payload: { emoji: '👍' } }] }, expect: 'refused', why: 'a queue assigned to another' },
      { method: 'POST', path: '/feedback/create', body: mine, expect: 'allowed', why: 'annotates in an open queue' },
      { method: 'POST', path: '/feedback/query', body: { project_id: PROJECT }, expect: 'allowed', why: 'their own records' },
      { method: 'POST', path: '/feedback/purge', body: { project_id: PROJECT, ids: [othersFeedback] }, expect: 'refused', why: "another's record" },
      { method: 'POST', path: '/feedback/replace', body: { ...mine, feedback_id: othersFeedback }, expect: 'refused', why: "another's record" },
      { method: 'POST', path: '/feedback/replace', body: { ...mine, feedback_id: ownFeedback }, expect: 'allowed', why: 'changes their own answer' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/rules`, body: ruleBody, expect: 'refused', why: 'creates a rule' },
      { method: 'POST', path: `/annotation_queues/${openQueue}/rules/query`, body: { project_id: PROJECT }, expect: 'refused', why: "a queue's rules are its owners' business" },
      { method: 'POST', path: `/annotation_queues/${openQueue}/rules/preview`, body: { project_id: PROJECT, trigger: 'call', filter: { op_names: ['chat'] } }, expect: 'refused', why: 'counts calls beyond their queues' },
      { method: 'PUT', path: `/annotation_queues/${openQueue}/rules/${rule}`, body: { project_id: PROJECT, enabled: false }, expect: 'refused', why: 'changes a rule' },
      { method: 'DELETE', path: `/annotation_queues/${openQueue}/rules/${rule}?${q}`, expect: 'refused', why: 'deletes a rule' },
      { method: 'POST', path: '/webhooks', body: hook, expect: 'refused', why: 'creates a webhook' },
      { method: 'POST', path: '/webhooks/query', body: { project_id: PROJECT }, expect: 'refused', why: 'webhooks are members\' business' },
      { method: 'PUT', path: `/webhooks/${webhook}`, body: { project_id: PROJECT, description: 'x' }, expect: 'refused', why: 'changes a webhook' },
      { method: 'DELETE', path: `/webhooks/${webhook}?${q}`, expect: 'refused', why: 'deletes a webhook' },
      { method: 'POST', path: `/webhooks/${webhook}/rotate-secret`, body: { project_id: PROJECT }, expect: 'refused', why: 'rotates a secret' },
      { method: 'POST', path: `/webhooks/${webhook}/test`, body: { project_id: PROJECT }, expect: 'refused', why: 'sends an event' },
      { method: 'POST', path: `/webhooks/${webhook}/deliveries/query`, body: { project_id: PROJECT }, expect: 'refused', why: 'deliveries' },
      { method: 'POST', path: `/webhooks/${webhook}/deliveries/${delivery}/retry`, body: { project_id: PROJECT }, expect: 'refused', why: 'sends again' },
      { method: 'POST', path: '/projects/users', body: { project_id: PROJECT, user_ids: [owner.user_id] }, expect: 'allowed', why: 'names' },
      { method: 'POST', path: '/projects/members', body: { project_id: PROJECT }, expect: 'refused', why: 'managing queues' },
      { method: 'POST', path: '/projects/query', body: {}, expect: 'allowed', why: 'their projects' },
      { method: 'GET', path: '/me', expect: 'allowed', why: 'themselves' },
      { method: 'GET', path: '/auth/methods', expect: 'allowed', why: 'public' },
      { method: 'POST', path: '/auth/sign-in', body: { username: annotator.username, password }, expect: 'allowed', why: 'signs in' },
      { method: 'POST', path: '/auth/sign-out', body: {}, expect: 'allowed', why: 'signs out (no session with a key)' },
      { method: 'POST', path: '/auth/accept-invitation', body: { token, username: `fresh${process.pid}`, password: 'a new passphrase 2' }, expect: 'allowed', why: 'public' },
      { method: 'POST', path: `/entities/${ENTITY}/invitations`, body: { role: 'annotator' }, expect: 'refused', why: 'invites' },
      { method: 'POST', path: `/entities/${ENTITY}/invitations/query`, body: {}, expect: 'refused', why: "invitations are admins' business" },
      { method: 'DELETE', path: `/entities/${ENTITY}/invitations/none`, expect: 'refused', why: 'revokes an invitation' },
      { method: 'POST', path: `/entities/${ENTITY}/members/query`, body: {}, expect: 'allowed', why: 'the members, no other annotator among them' },
      { method: 'PUT', path: `/entities/${ENTITY}/members/${other.user_id}`, body: { role: 'member' }, expect: 'refused', why: 'changes a role' },
      { method: 'DELETE', path: `/entities/${ENTITY}/members/${other.user_id}`, expect: 'refused', why: 'removes a member' },
      { method: 'POST', path: `/entities/${ENTITY}/audit/query`, body: {}, expect: 'refused', why: "the audit log is admins' business" },
      { method: 'POST', path: '/me/api-keys', body: { name: 'third' }, expect: 'allowed', why: 'their own key' },
      { method: 'POST', path: '/me/api-keys/query', body: {}, expect: 'allowed', why: 'their own keys' },
      { method: 'DELETE', path: `/me/api-keys/${ownKey}`, expect: 'allowed', why: 'revokes their own key' },
      { method: 'GET', path: '/inference/router/partner/models', expect: 'allowed', why: 'public' },
    ];
  });
  afterAll(() => server?.stop());

  it('has a request for every operation of the API document', async () => {
    const document = (await rest(server, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(new Set(requests.map((request) => `${request.method} ${operationTemplate(request.path)}`))).toEqual(new Set(operations));
  });

  it('answers each as the role allows (403 for every other write, agreement and queues not open to them), and no answer holds another annotator\'s work', async () => {
    const before = await ownerView();
    for (const request of requests) {
      const reply = await rest(server, request.method, request.path, { key: annotator.api_key, body: request.body });
      const what = `${request.method} ${request.path} (${request.why}): ${reply.text.slice(0, 300)}`;
      if (request.expect === 'refused') {
        expect(reply.status, what).toBe(403);
      } else {
        expect(reply.status, what).toBe(200);
        expect(reply.text, what).not.toContain(other.user_id);
        expect(reply.text, what).not.toContain(SECRET);
      }
    }
    // What the refused writes would have changed is unchanged (the allowed ones added the annotator's own work only).
    const after = await ownerView();
    expect(after.queues).toEqual(before.queues);
    expect(after.calls).toEqual(before.calls);
    expect(after.items.map((item) => item.id)).toEqual(before.items.map((item) => item.id));
    expect(after.feedback.filter((f) => f.svc_user_id !== annotator.user_id)).toEqual(before.feedback.filter((f) => f.svc_user_id !== annotator.user_id));
  });

  it('sees their own state on items, their own entries in stats, their own records, the calls of their queues', async () => {
    const as = (method: string, path: string, body?: unknown) => rest(server, method, path, { key: annotator.api_key, body });
    // The other annotator finishes c2, which the annotator never touched: to a member the item
    // shows the other's state; to the annotator, their own (none).
    expect((await claim(server, other.api_key, PROJECT, openQueue)).body.item.id).toBe(openItems[1]!.id);
    expect((await progress(server, other.api_key, PROJECT, openQueue, openItems[1]!.id, 'completed')).status).toBe(200);
    const shownToOwner = await queryItems(server, owner.api_key, PROJECT, openQueue);
    expect(shownToOwner[1]).toMatchObject({ annotation_state: 'completed', annotator_user_id: other.user_id });
    const items = (await as('POST', `/annotation_queues/${openQueue}/items/query`, { project_id: PROJECT })).body.items;
    expect(items[0]).toMatchObject({ id: openItems[0]!.id, annotation_state: 'completed', annotator_user_id: annotator.user_id });
    expect(items[1]).toMatchObject({ id: openItems[1]!.id, annotation_state: 'unstarted', annotator_user_id: null });
    expect(JSON.stringify(items)).not.toContain(other.user_id);
    const filtered = (await as('POST', `/annotation_queues/${openQueue}/items/query`, { project_id: PROJECT, filter: { annotation_states: ['unstarted', 'in_progress'] } })).body.items;
    expect(filtered.map((item: { id: string }) => item.id)).toEqual([openItems[1]!.id]);

    const [stats] = (await as('POST', '/annotation_queues/stats', { project_id: PROJECT, queue_ids: [openQueue] })).body.stats;
    expect(stats.by_annotator.map((entry: { annotator_user_id: string }) => entry.annotator_user_id)).toEqual([annotator.user_id]);
    expect(stats.total_items).toBe(2);

    const feedback = (await as('POST', '/feedback/query', { project_id: PROJECT })).body.result;
    expect(feedback.length).toBeGreaterThan(0);
    expect(new Set(feedback.map((f: { svc_user_id: string }) => f.svc_user_id))).toEqual(new Set([annotator.user_id]));
    expect((await as('POST', '/feedback/query', { project_id: PROJECT, filter: { svc_user_id: other.user_id } })).body.result).toEqual([]);

    const calls = (await as('POST', '/calls/query', { project_id: PROJECT })).body.calls;
    expect(calls.map((call: { id: string }) => call.id)).toEqual(['c1', 'c2']);
    expect((await as('GET', `/calls/c3${projectQuery(PROJECT)}`)).body.reason).toBe('Call "c3" is not an item of an annotation queue open to you; an annotator reads only those.');

    const queues = (await as('POST', '/annotation_queues/query', { project_id: PROJECT })).body.queues;
    expect(queues.map((queue: { id: string }) => queue.id)).toEqual([openQueue]);
    const agreement = await as('POST', `/annotation_queues/${openQueue}/agreement`, { project_id: PROJECT });
    expect(agreement.body.reason).toBe('Your role in entity "blind" is annotator, which works the annotation queues open to it and nothing else.');

    // Assigned to them, a queue opens: they claim in it and read it.
    const theirs = await createQueue(server, owner.api_key, PROJECT, { access: 'assigned', assignees: [annotator.user_id] });
    await addItems(server, owner.api_key, PROJECT, theirs, ['c3']);
    expect((await claim(server, annotator.api_key, PROJECT, theirs)).status).toBe(200);
    expect((await as('GET', `/calls/c3${projectQuery(PROJECT)}`)).status).toBe(200);
    // The typed door answers alike.
    const typed = client(server, annotator.api_key);
    expect((await typed.annotationQueues.items.query.query({ project_id: PROJECT, queue_id: openQueue })).items).toEqual(items);
    await expect(typed.annotationQueues.agreement.query({ project_id: PROJECT, queue_id: openQueue })).rejects.toMatchObject({ data: { httpStatus: 403 } });
    await expect(typed.annotationQueues.read.query({ project_id: PROJECT, queue_id: closedQueue })).rejects.toMatchObject({ data: { httpStatus: 403 } });
  });

  /** What the project holds, as a member sees it. */
  async function ownerView() {
    const as = (path: string, body: unknown) => rest(server, 'POST', path, { key: owner.api_key, body });
    return {
      queues: (await as('/annotation_queues/query', { project_id: PROJECT })).body.queues as unknown[],
      calls: (await as('/calls/query', { project_id: PROJECT })).body.calls as unknown[],
      items: [...(await queryItems(server, owner.api_key, PROJECT, openQueue)), ...(await queryItems(server, owner.api_key, PROJECT, closedQueue))],
      feedback: (await as('/feedback/query', { project_id: PROJECT })).body.result as { svc_user_id: string }[],
    };
  }
});

/** `/annotation_queues/abc/items?x` → `/annotation_queues/{queue_id}/items`: the document's path of a request. */
