import { NAME_PART, ROLES, type Role } from '@loupe/shared';
import type { OidcSettings, PeopleSettings } from '../config.ts';
import { lockClause, sqlDate, sqlRows, sqlRun, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { entitiesOfUser, recordAudit } from '../domain/audit-log.ts';
import { newId } from '../domain/ids.ts';
import { OidcRefusal, type OidcIdentity } from './oidc-client.ts';
import { startSession } from './sessions.ts';

// Who a person the provider vouched for is in Loupe (contract 5.12): the user of the provider's
// (issuer, sub), made on first sign-in; their membership of LOUPE_OIDC_ENTITY with the role their
// claim maps to; a session. A person is never matched to an existing account by username or email:
// whoever controls a name at the provider would take over the Loupe account of that name.

/** The strongest role first: when several claim values map, the first of these wins. */
const STRENGTH: readonly Role[] = ROLES;

/** The role a person's claim maps to (the strongest of its mapped values), or undefined when none is mapped. */
export function mappedRole(settings: OidcSettings, claims: Record<string, unknown>): Role | undefined {
  const raw = claims[settings.roleClaim];
  const values = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw.filter((v): v is string => typeof v === 'string') : [];
  let best: Role | undefined;
  for (const { value, role } of settings.roleMap) {
    if (values.includes(value) && (best === undefined || STRENGTH.indexOf(role) < STRENGTH.indexOf(best))) best = role;
  }
  return best;
}

/** A valid username from the provider's `preferred_username`, else the local part of `email`, else "user". */
export function usernameBase(claims: Record<string, unknown>): string {
  const candidates = [claims.preferred_username, typeof claims.email === 'string' ? claims.email.split('@')[0] : undefined];
  for (const candidate of candidates) {
    if (typeof candidate !== 'string') continue;
    const name = candidate.slice(0, 200).replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 100);
    if (NAME_PART.test(name) && name !== 'api') return name;
  }
  return 'user';
}

/** Another transaction took the person's identity or the chosen name meanwhile: the transaction is run again. */
class IdentityTaken extends Error {}

type SignOn = { identity: OidcIdentity; people: PeopleSettings; oidc: OidcSettings; client: string };

/**
 * Signs in the person of a verified identity: finds or makes their user, gives them their role in
 * the entity, starts a session and writes the sign-in into the audit log, in one transaction.
 * A person with no mapped role and no default role is refused (403) and nothing is written but the
 * failure. A returning member's role follows the claim when it maps one (the provider is where
 * roles are managed); the default role only ever applies to joining; the last admin of the entity
 * is never demoted this way.
 */
export async function signOn(db: SqlScope, request: SignOn): Promise<{ userId: string; username: string; token: string; maxAgeSeconds: number }> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await sqlTransaction(db, (tx) => signOnIn(tx, request));
    } catch (error) {
      if (!(error instanceof IdentityTaken) || attempt >= 2) throw error;
    }
  }
}

async function signOnIn(tx: SqlScope, { identity, people, oidc, client }: SignOn) {
  const now = new Date();
  const mapped = mappedRole(oidc, identity.claims);
  const role = mapped ?? oidc.defaultRole;
  if (role === undefined) {
    const claimed = identity.claims[oidc.roleClaim];
    throw new OidcRefusal(403, `Your account at the sign-in provider has no role in Loupe: its "${oidc.roleClaim}" claim ${claimed === undefined ? 'is missing' : 'names no role this server maps'}. Ask an administrator for access.`);
  }
  // The entity is made by the first sign-in into it (a fresh install signed into with single sign-on alone).
  await sqlRun(tx, sql`insert into entities (name, created_at) values (${oidc.entity}, ${sqlDate(tx, now)}) on conflict (name) do nothing`);
  // Sign-ins into one entity are serialised on its row (as membership changes are, members.ts),
  // before the person is looked up: a first sign-in twice at once makes one account, not two.
  await sqlRows(tx, sql`select name from entities where name = ${oidc.entity}${lockClause(tx, 'for update')}`);
  const [known] = await sqlRows<{ user_id: string; username: string }>(tx,
    sql`select i.user_id, u.username from user_identities i join users u on u.id = i.user_id
         where i.issuer = ${identity.issuer} and i.subject = ${identity.subject}`);

  let user: { id: string; username: string };
  let newUser = false;
  if (known) {
    user = { id: known.user_id, username: known.username };
  } else {
    user = { id: newId(), username: await freeUsername(tx, usernameBase(identity.claims)) };
    // A name or an identity taken meanwhile (by a sign-in into another entity, or an invitation): run again.
    const [made] = await sqlRows<{ id: string }>(tx,
      sql`insert into users (id, username, password_hash, created_at) values (${user.id}, ${user.username}, ${null}, ${sqlDate(tx, now)})
          on conflict (username) do nothing returning id`);
    if (!made) throw new IdentityTaken();
    const [linked] = await sqlRows<{ user_id: string }>(tx,
      sql`insert into user_identities (issuer, subject, user_id, created_at) values (${identity.issuer}, ${identity.subject}, ${user.id}, ${sqlDate(tx, now)})
          on conflict (issuer, subject) do nothing returning user_id`);
    if (!linked) throw new IdentityTaken();
    newUser = true;
  }

  const [member] = await sqlRows<{ role: Role }>(tx, sql`select role from memberships where user_id = ${user.id} and entity = ${oidc.entity}`);
  const actor = { userId: user.id, username: user.username };
  let joined: Role | undefined;
  if (!member) {
    await sqlRun(tx, sql`insert into memberships (user_id, entity, role, created_at) values (${user.id}, ${oidc.entity}, ${role}, ${sqlDate(tx, now)})`);
    joined = role;
  } else if (mapped !== undefined && mapped !== member.role && !(member.role === 'admin' && (await lastAdmin(tx, oidc.entity)))) {
    await sqlRun(tx, sql`update memberships set role = ${mapped} where user_id = ${user.id} and entity = ${oidc.entity}`);
    await recordAudit(tx, [oidc.entity], { action: 'member_role_changed', actor: null, subjectUserId: user.id, client, detail: { from: member.role, to: mapped, by: 'single_sign_on' } });
  }
  const session = await startSession(tx, { userId: user.id, client, settings: people });
  await recordAudit(tx, await entitiesOfUser(tx, user.id), {
    action: 'sign_in',
    actor,
    client,
    detail: { method: 'single_sign_on', issuer: identity.issuer.slice(0, 512), subject: identity.subject.slice(0, 256), ...(newUser ? { new_user: true } : {}), ...(joined ? { joined_as: joined } : {}) },
  });
  return { userId: user.id, username: user.username, ...session };
}

async function lastAdmin(tx: SqlScope, entity: string): Promise<boolean> {
  const [count] = await sqlRows<{ n: number | string }>(tx, sql`select count(*) as n from memberships where entity = ${entity} and role = 'admin'`);
  return Number(count!.n) <= 1;
}

/** `base`, else `base-2`, `base-3`…: the first not taken (a few tries, then a random suffix). */
async function freeUsername(tx: SqlScope, base: string): Promise<string> {
  const stem = base.slice(0, 100);
  const candidates = [stem, ...Array.from({ length: 8 }, (_, i) => `${stem}-${i + 2}`), `${stem}-${newId().slice(0, 8)}`];
  const taken = new Set((await sqlRows<{ username: string }>(tx, sql`select username from users where username in (${sql.list(candidates)})`)).map((row) => row.username));
  return candidates.find((candidate) => !taken.has(candidate)) ?? `${stem}-${newId()}`;
}

/**
 * A refused attempt in the audit log: into LOUPE_OIDC_ENTITY's log when the provider vouched for
 * the person (they are someone the entity's admins may want to let in), else into no entity's log
 * (an anonymous client's bad state or code is no news for the admins; kept all the same).
 */
export async function recordSignOnFailure(db: SqlScope, { oidc, identity, reason, client }: { oidc: OidcSettings; identity: OidcIdentity | undefined; reason: string; client: string }): Promise<void> {
  let subjectUserId: string | null = null;
  if (identity) {
    const [known] = await sqlRows<{ user_id: string }>(db, sql`select user_id from user_identities where issuer = ${identity.issuer} and subject = ${identity.subject}`);
    subjectUserId = known?.user_id ?? null;
  }
  const username = identity?.claims.preferred_username ?? identity?.claims.email;
  await recordAudit(db, identity ? [oidc.entity] : [], {
    action: 'sign_in_failed',
    actor: null,
    subjectUserId,
    client,
    detail: {
      method: 'single_sign_on',
      reason: reason.slice(0, 300),
      ...(identity ? { subject: identity.subject.slice(0, 256) } : {}),
      ...(typeof username === 'string' ? { username: username.slice(0, 128) } : {}),
    },
  });
}
