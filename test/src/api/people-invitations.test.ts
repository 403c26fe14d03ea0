import { sql, sqlRun } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { givePassword, sessionCookieOf, signIn, withCookie } from '../harness/sessions.ts';

// Invitations (contract 5.12): an entity admin invites with any role; the token is only in the
// link, shown once; it is accepted once, and a used, expired or revoked one is refused with its
// own reason. Members cannot invite, and an admin of one entity cannot invite into another.

const ENTITY = 'inviting';
const PASSWORD = 'correct horse battery staple';

describeEachBackend('invitations', (backend) => {
  let server: TestServer;
  let admin: CreatedKeyForTest;
  let member: CreatedKeyForTest;
  let otherAdmin: CreatedKeyForTest;
  let counter = 0;
  const newName = () => `invitee${process.pid}x${++counter}`;

  const invite = (body: Record<string, unknown>, key = admin.api_key, entity = ENTITY) => rest(server, 'POST', `/entities/${entity}/invitations`, { key, body });
  const tokenOf = (url: string) => new URL(url).hash.replace(/^#token=/, '');
  const accept = (body: Record<string, unknown>, headers: Record<string, string> = {}) => rest(server, 'POST', '/auth/accept-invitation', { body, headers });

  beforeAll(async () => {
    server = await startTestServer(backend, { LOUPE_PUBLIC_URL: 'https://loupe.example.com/' });
    admin = await createUser(server, { entity: ENTITY, role: 'admin' });
    member = await createUser(server, { entity: ENTITY, role: 'member' });
    otherAdmin = await createUser(server, { entity: 'another-entity', role: 'admin' });
  });
  afterAll(() => server?.stop());

  it('makes an invitation with any role, annotator included; the token is in the link only, and the list never shows it', async () => {
    const created = await invite({ role: 'annotator', email: 'ann@example.com', expires_in_hours: 2 });
    expect(created.status, created.text).toBe(200);
    const invitation = created.body.invitation;
    expect(invitation).toMatchObject({ entity: ENTITY, role: 'annotator', email: 'ann@example.com', state: 'pending', created_by: admin.user_id, accepted_by: null });
    expect(invitation.url).toMatch(/^https:\/\/loupe\.example\.com\/app\/accept-invitation#token=[A-Za-z0-9_-]{43}$/);
    const hours = (Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)) / 3_600_000;
    expect(hours).toBeCloseTo(2, 5);

    const listed = await rest(server, 'POST', `/entities/${ENTITY}/invitations/query`, { key: admin.api_key, body: {} });
    expect(listed.body.invitations.map((i: { id: string }) => i.id)).toContain(invitation.id);
    expect(listed.text).not.toContain(tokenOf(invitation.url));

    const accepted = await accept({ token: tokenOf(invitation.url), username: newName(), password: PASSWORD });
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.body.user.memberships).toEqual([{ entity: ENTITY, role: 'annotator' }]);
    const cookie = sessionCookieOf(accepted)!;
    expect((await withCookie(server, cookie, 'GET', '/me')).body.user_id).toBe(accepted.body.user.user_id);
    // The new account's password works.
    await signIn(server, accepted.body.user.username, PASSWORD);
  });

  it('refuses a used, an expired and a revoked invitation each with its own reason (400), and an unknown token', async () => {
    const used = (await invite({ role: 'member' })).body.invitation;
    expect((await accept({ token: tokenOf(used.url), username: newName(), password: PASSWORD })).status).toBe(200);
    const again = await accept({ token: tokenOf(used.url), username: newName(), password: PASSWORD });
    expect(again.status).toBe(400);
    expect(again.body.reason).toBe('This invitation has already been used.');

    const expired = (await invite({ role: 'viewer' })).body.invitation;
    const past = new Date(Date.now() - 1000);
    await sqlRun(server.server.services.orm.em, sql`update invitations set expires_at = ${backend === 'sqlite' ? past.getTime() : past} where id = ${expired.id}`);
    const late = await accept({ token: tokenOf(expired.url), username: newName(), password: PASSWORD });
    expect(late.status).toBe(400);
    expect(late.body.reason).toBe('This invitation has expired.');

    const revoked = (await invite({ role: 'admin' })).body.invitation;
    const revocation = await rest(server, 'DELETE', `/entities/${ENTITY}/invitations/${revoked.id}`, { key: admin.api_key });
    expect(revocation.status, revocation.text).toBe(200);
    expect(revocation.body.invitation.state).toBe('revoked');
    const afterRevoke = await accept({ token: tokenOf(revoked.url), username: newName(), password: PASSWORD });
    expect(afterRevoke.status).toBe(400);
    expect(afterRevoke.body.reason).toBe('This invitation has been revoked.');

    const unknown = await accept({ token: 'A'.repeat(43), username: newName(), password: PASSWORD });
    expect(unknown.status).toBe(400);
    expect(unknown.body.reason).toBe('This invitation link is not valid.');

    // None of the refused ones made a user or a membership, nor set a cookie.
    for (const reply of [again, late, afterRevoke, unknown]) expect(sessionCookieOf(reply)).toBeUndefined();
    const members = (await rest(server, 'POST', `/entities/${ENTITY}/members/query`, { key: admin.api_key, body: {} })).body.members;
    expect(members.filter((m: { role: string }) => m.role === 'viewer')).toEqual([]);
    const states = (await rest(server, 'POST', `/entities/${ENTITY}/invitations/query`, { key: admin.api_key, body: {} })).body.invitations;
    const stateOf = (id: string) => states.find((i: { id: string }) => i.id === id).state;
    expect([stateOf(used.id), stateOf(expired.id), stateOf(revoked.id)]).toEqual(['accepted', 'expired', 'revoked']);
  });

  it('accepts once when two try at the same time', async () => {
    const invitation = (await invite({ role: 'member' })).body.invitation;
    const replies = await Promise.all([0, 1, 2].map(() => accept({ token: tokenOf(invitation.url), username: newName(), password: PASSWORD })));
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 400, 400]);
  });

  it('gives one new name to one of two invitations accepted at the same time: the other is 409, its invitation unused', async () => {
    const [first, second] = await Promise.all([invite({ role: 'member' }), invite({ role: 'viewer' })]).then((made) => made.map((reply) => reply.body.invitation));
    const username = newName();
    const replies = await Promise.all([first, second].map((invitation) => accept({ token: tokenOf(invitation.url), username, password: PASSWORD })));
    expect(replies.map((reply) => reply.status).sort(), JSON.stringify(replies.map((reply) => reply.body))).toEqual([200, 409]);
    const loser = replies[0]!.status === 409 ? first : second;
    const listed = (await rest(server, 'POST', `/entities/${ENTITY}/invitations/query`, { key: admin.api_key, body: {} })).body.invitations;
    expect(listed.find((invitation: { id: string }) => invitation.id === loser.id).state).toBe('pending');
  });

  it('refuses a weak password, a taken username and a half-given account, using up nothing', async () => {
    const invitation = (await invite({ role: 'member' })).body.invitation;
    const token = tokenOf(invitation.url);
    const short = await accept({ token, username: newName(), password: 'short pass' });
    expect(short.status).toBe(400);
    expect(short.body.reason).toBe('The password must be at least 12 characters long.');
    const common = await accept({ token, username: newName(), password: 'password1234' });
    expect(common.status).toBe(400);
    expect(common.body.reason).toBe('The password is one of the most common passwords; choose another.');
    const taken = await accept({ token, username: member.username, password: PASSWORD });
    expect(taken.status).toBe(409);
    const half = await accept({ token, username: newName() });
    expect(half.status).toBe(400);
    expect((await accept({ token, username: newName(), password: PASSWORD })).status).toBe(200);
  });

  it('lets a signed-in user join another entity with the token alone; with their cookie from another site it is refused', async () => {
    const joiner = await createUser(server, { entity: 'another-entity', role: 'member' });
    await givePassword(server, joiner.username, PASSWORD);
    const { cookie } = await signIn(server, joiner.username, PASSWORD);
    const invitation = (await invite({ role: 'viewer' })).body.invitation;
    const crossSite = await accept({ token: tokenOf(invitation.url) }, { cookie, origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.reason).toBe('cross-site request refused');
    const anonymous = await accept({ token: tokenOf(invitation.url) });
    expect(anonymous.status).toBe(400);
    const joined = await accept({ token: tokenOf(invitation.url) }, { cookie, origin: server.url });
    expect(joined.status, joined.text).toBe(200);
    expect(joined.body.user.memberships).toEqual([{ entity: 'another-entity', role: 'member' }, { entity: ENTITY, role: 'viewer' }]);
    const again = await accept({ token: tokenOf((await invite({ role: 'member' })).body.invitation.url) }, { cookie: sessionCookieOf(joined)!, origin: server.url });
    expect(again.status).toBe(400);
    expect(again.body.reason).toBe(`You are already a member of entity "${ENTITY}" (as viewer).`);
  });

  it('refuses members and admins of another entity: no invitation made, listed or revoked (403)', async () => {
    const existing = (await invite({ role: 'member' })).body.invitation;
    for (const key of [member.api_key, otherAdmin.api_key]) {
      expect((await invite({ role: 'admin' }, key)).status).toBe(403);
      expect((await rest(server, 'POST', `/entities/${ENTITY}/invitations/query`, { key, body: {} })).status).toBe(403);
      expect((await rest(server, 'DELETE', `/entities/${ENTITY}/invitations/${existing.id}`, { key })).status).toBe(403);
    }
    const reason = (await invite({ role: 'admin' }, member.api_key)).body.reason;
    expect(reason).toBe(`Your role in entity "${ENTITY}" is member; only its admins may do this.`);
    expect((await invite({ role: 'admin' }, otherAdmin.api_key)).body.reason).toBe(`You are not a member of entity "${ENTITY}".`);
    // The admin of the other entity revokes nothing here by naming this entity's invitation under their own.
    expect((await rest(server, 'DELETE', `/entities/another-entity/invitations/${existing.id}`, { key: otherAdmin.api_key })).status).toBe(404);
    const listed = (await rest(server, 'POST', `/entities/${ENTITY}/invitations/query`, { key: admin.api_key, body: {} })).body.invitations;
    expect(listed.find((i: { id: string }) => i.id === existing.id).state).toBe('pending');
  });

  it('refuses an out-of-range expiry and an unknown role with 400 naming the field', async () => {
    for (const body of [{ role: 'member', expires_in_hours: 0 }, { role: 'member', expires_in_hours: 721 }, { role: 'owner' }, { role: 'member', email: 'not an address' }]) {
      const reply = await invite(body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.issues.length).toBeGreaterThan(0);
    }
  });
});
