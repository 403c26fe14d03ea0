import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { givePassword, signIn, withCookie } from '../harness/sessions.ts';

// Members, own API keys and the audit log (contract 5.12): any member lists the members; admins
// change roles and remove members, never the last admin; an admin of one entity cannot touch
// another's members; removal from every entity ends the user's sessions at once. Keys are a
// person's own. The audit log holds who did what, when and from where, for admins only.

const ENTITY = 'team';
const PASSWORD = 'correct horse battery staple';

describeEachBackend('members, own keys and the audit log', (backend) => {
  let server: TestServer;
  let admin: CreatedKeyForTest;
  let outsider: CreatedKeyForTest;

  const as = (key: string, method: string, path: string, body?: unknown) => rest(server, method, path, { key, body });
  const members = async (key = admin.api_key) => (await as(key, 'POST', `/entities/${ENTITY}/members/query`, {})).body.members as { user_id: string; role: string; last_seen_at: string | null }[];
  const roleOf = async (userId: string) => (await members()).find((m) => m.user_id === userId)?.role;

  beforeAll(async () => {
    server = await startTestServer(backend);
    admin = await createUser(server, { entity: ENTITY, role: 'admin' });
    outsider = await createUser(server, { entity: 'rivals', role: 'admin' });
  });
  afterAll(() => server?.stop());

  it('lists the members to any member, with when each was last seen', async () => {
    const viewer = await createUser(server, { entity: ENTITY, role: 'viewer' });
    await givePassword(server, viewer.username, PASSWORD);
    await signIn(server, viewer.username, PASSWORD);
    const listed = await members(viewer.api_key);
    expect(listed.find((m) => m.user_id === viewer.user_id)).toMatchObject({ role: 'viewer', username: viewer.username });
    expect(Date.parse(listed.find((m) => m.user_id === viewer.user_id)!.last_seen_at!)).toBeGreaterThan(Date.now() - 60_000);
    expect(listed.find((m) => m.user_id === admin.user_id)).toMatchObject({ role: 'admin', last_seen_at: null });
    expect((await as(outsider.api_key, 'POST', `/entities/${ENTITY}/members/query`, {})).status).toBe(403);
  });

  it('lets an admin change a role, and refuses members and admins of other entities (403) with nothing changed', async () => {
    const m = await createUser(server, { entity: ENTITY, role: 'member' });
    const target = await createUser(server, { entity: ENTITY, role: 'member' });
    for (const key of [m.api_key, outsider.api_key]) {
      expect((await as(key, 'PUT', `/entities/${ENTITY}/members/${target.user_id}`, { role: 'admin' })).status).toBe(403);
      expect((await as(key, 'DELETE', `/entities/${ENTITY}/members/${target.user_id}`)).status).toBe(403);
      expect((await as(key, 'POST', `/entities/${ENTITY}/audit/query`, {})).status).toBe(403);
    }
    expect(await roleOf(target.user_id)).toBe('member');
    const changed = await as(admin.api_key, 'PUT', `/entities/${ENTITY}/members/${target.user_id}`, { role: 'annotator' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.member).toMatchObject({ user_id: target.user_id, role: 'annotator' });
    // Access follows at once: the key of the new annotator can no longer create a queue.
    expect((await as(target.api_key, 'POST', '/annotation_queues', { project_id: `${ENTITY}/p`, name: 'q' })).status).toBe(403);
    expect((await as(admin.api_key, 'PUT', `/entities/${ENTITY}/members/not-a-member`, { role: 'viewer' })).status).toBe(404);
  });

  it('keeps the last admin: neither demoted nor removed (400); with a second admin, either may go', async () => {
    const demote = await as(admin.api_key, 'PUT', `/entities/${ENTITY}/members/${admin.user_id}`, { role: 'member' });
    expect(demote.status).toBe(400);
    expect(demote.body.reason).toBe(`The last admin of entity "${ENTITY}" cannot be demoted; make another member admin first.`);
    const remove = await as(admin.api_key, 'DELETE', `/entities/${ENTITY}/members/${admin.user_id}`);
    expect(remove.status).toBe(400);
    expect(await roleOf(admin.user_id)).toBe('admin');

    const second = await createUser(server, { entity: ENTITY, role: 'admin' });
    // Two admins demoting each other at once: one of them stays admin.
    const both = await Promise.all([
      as(admin.api_key, 'PUT', `/entities/${ENTITY}/members/${second.user_id}`, { role: 'member' }),
      as(second.api_key, 'PUT', `/entities/${ENTITY}/members/${admin.user_id}`, { role: 'member' }),
    ]);
    // The other is refused with 403 on both databases: under the entity's lock, its actor is no
    // longer an admin (whether or not it passed authentication before the first one's commit).
    expect(both.map((reply) => reply.status).sort()).toEqual([200, 403]);
    expect(both.find((reply) => reply.status === 403)!.body.reason).toBe(`Your role in entity "${ENTITY}" is member; only its admins may do this.`);
    const admins = (await members(both[0]!.status === 200 ? admin.api_key : second.api_key)).filter((m) => m.role === 'admin');
    expect(admins).toHaveLength(1);
    // Put things back as they were for the tests that follow.
    if (admins[0]!.user_id !== admin.user_id) {
      expect((await as(second.api_key, 'PUT', `/entities/${ENTITY}/members/${admin.user_id}`, { role: 'admin' })).status).toBe(200);
    }
  });

  it('removal from one entity takes its access away at once; removal from every entity ends the sessions at once', async () => {
    const both = await createUser(server, { entity: ENTITY, role: 'member' });
    const rivalsAdmin = outsider;
    await givePassword(server, both.username, PASSWORD);
    // Also a member of "rivals", made so by its admin's invitation.
    const url = (await as(rivalsAdmin.api_key, 'POST', '/entities/rivals/invitations', { role: 'member' })).body.invitation.url as string;
    const { cookie } = await signIn(server, both.username, PASSWORD);
    const joined = await withCookie(server, cookie, 'POST', '/auth/accept-invitation', { body: { token: new URL(url).hash.slice('#token='.length) } });
    expect(joined.status, joined.text).toBe(200);
    const session = joined.headers.get('set-cookie')!.split(';')[0]!;

    // An admin of another entity cannot remove them from this one.
    expect((await as(rivalsAdmin.api_key, 'DELETE', `/entities/${ENTITY}/members/${both.user_id}`)).status).toBe(403);
    const removed = await as(admin.api_key, 'DELETE', `/entities/${ENTITY}/members/${both.user_id}`);
    expect(removed.status, removed.text).toBe(200);
    const me = await withCookie(server, session, 'GET', '/me');
    expect(me.status).toBe(200);
    expect(me.body.memberships).toEqual([{ entity: 'rivals', role: 'member' }]);
    expect((await withCookie(server, session, 'POST', `/entities/${ENTITY}/members/query`, { body: {} })).status).toBe(403);

    expect((await as(rivalsAdmin.api_key, 'DELETE', `/entities/rivals/members/${both.user_id}`)).status).toBe(200);
    expect((await withCookie(server, session, 'GET', '/me')).status).toBe(401);
  });

  it('own API keys: made (shown once), listed without the key, revoked at once; another person\'s key is not yours to revoke', async () => {
    const person = await createUser(server, { entity: ENTITY, role: 'member' });
    const other = await createUser(server, { entity: ENTITY, role: 'member' });
    const made = await as(person.api_key, 'POST', '/me/api-keys', { name: 'laptop script' });
    expect(made.status, made.text).toBe(200);
    expect(made.body.api_key).toMatchObject({ name: 'laptop script' });
    const key = made.body.key as string;
    expect((await as(key, 'GET', '/me')).body.user_id).toBe(person.user_id);

    const listed = await as(person.api_key, 'POST', '/me/api-keys/query', {});
    expect(listed.body.api_keys.map((k: { id: string }) => k.id)).toContain(made.body.api_key.id);
    expect(listed.text).not.toContain(key);

    expect((await as(other.api_key, 'DELETE', `/me/api-keys/${made.body.api_key.id}`)).status).toBe(404);
    expect((await as(key, 'GET', '/me')).status).toBe(200);
    const revoked = await as(person.api_key, 'DELETE', `/me/api-keys/${made.body.api_key.id}`);
    expect(revoked.status, revoked.text).toBe(200);
    expect((await as(key, 'GET', '/me')).status).toBe(401);
    expect((await as(person.api_key, 'POST', '/me/api-keys/query', {})).body.api_keys.map((k: { id: string }) => k.id)).not.toContain(made.body.api_key.id);
  });

  it('the audit log holds sign-ins and failures, invitations, role changes, removals and keys, with actor, time and client address, newest first, paged', async () => {
    const subject = await createUser(server, { entity: ENTITY, role: 'member' });
    await givePassword(server, subject.username, PASSWORD);
    expect((await rest(server, 'POST', '/auth/sign-in', { body: { username: subject.username, password: 'wrong wrong wrong' } })).status).toBe(401);
    await signIn(server, subject.username, PASSWORD);
    const invitation = (await as(admin.api_key, 'POST', `/entities/${ENTITY}/invitations`, { role: 'viewer' })).body.invitation;
    await as(admin.api_key, 'DELETE', `/entities/${ENTITY}/invitations/${invitation.id}`);
    await as(admin.api_key, 'PUT', `/entities/${ENTITY}/members/${subject.user_id}`, { role: 'viewer' });
    const key = (await as(subject.api_key, 'POST', '/me/api-keys', { name: 'k' })).body.api_key.id;
    await as(subject.api_key, 'DELETE', `/me/api-keys/${key}`);
    await as(admin.api_key, 'DELETE', `/entities/${ENTITY}/members/${subject.user_id}`);

    const page = await as(admin.api_key, 'POST', `/entities/${ENTITY}/audit/query`, { limit: 8 });
    expect(page.status, page.text).toBe(200);
    const actions = page.body.events.map((e: { action: string }) => e.action);
    expect(actions).toEqual([
      'member_removed', 'api_key_revoked', 'api_key_created', 'member_role_changed', 'invitation_revoked', 'invitation_created', 'sign_in', 'sign_in_failed',
    ]);
    const [removal, , , roleChange, , , signInEvent, failure] = page.body.events;
    expect(removal).toMatchObject({ actor_user_id: admin.user_id, subject_user_id: subject.user_id, detail: { role: 'viewer' } });
    expect(roleChange.detail).toEqual({ from: 'member', to: 'viewer' });
    expect(signInEvent).toMatchObject({ actor_user_id: subject.user_id, actor_username: subject.username });
    expect(failure).toMatchObject({ actor_user_id: null, subject_user_id: subject.user_id, detail: { username: subject.username } });
    for (const event of page.body.events) {
      expect(event.client_address).toMatch(/127\.0\.0\.1|::1/);
      expect(Date.parse(event.created_at)).toBeGreaterThan(Date.now() - 120_000);
    }
    expect(page.body.next_cursor).toEqual(expect.any(String));
    const next = await as(admin.api_key, 'POST', `/entities/${ENTITY}/audit/query`, { limit: 8, cursor: page.body.next_cursor });
    expect(next.status).toBe(200);
    expect(next.body.events.length).toBeGreaterThan(0);
    expect(next.body.events.map((e: { id: string }) => e.id)).not.toContain(page.body.events[7].id);
    // Nothing of another entity's log.
    const rivals = await as(outsider.api_key, 'POST', '/entities/rivals/audit/query', { limit: 1000 });
    expect(rivals.text).not.toContain(invitation.id);
  });
});
