import type { Em } from '../db/orm.ts';
import { NAME_PART, type Role } from '@loupe/shared';
import { generateApiKey } from '../auth/api-keys.ts';
import { ApiKey, EntityRecord, Membership, User } from '../db/entities.ts';
import { newId } from '../domain/ids.ts';

/** A failure the operator caused (unknown user, bad name): printed as one line, exit code 1. */
export class AdminError extends Error {}

export type CreatedKey = { key_id: string; user_id: string; username: string; api_key: string };

function checkName(kind: string, name: string): void {
  if (!NAME_PART.test(name)) {
    throw new AdminError(`${kind} "${name}" is invalid: use 1-128 of [A-Za-z0-9_.-], starting with a letter or digit`);
  }
}

async function userNamed(em: Em, username: string) {
  const user = await em.findOne(User, { username });
  if (!user) throw new AdminError(`no user named "${username}"`);
  return user;
}

async function addKey(em: Em, user: { id: string; username: string }): Promise<CreatedKey> {
  const { key, hash } = generateApiKey();
  const id = newId();
  em.create(ApiKey, { id, userId: user.id, keyHash: hash, createdAt: new Date(), revokedAt: null });
  await em.flush();
  return { key_id: id, user_id: user.id, username: user.username, api_key: key };
}

async function upsertMembership(em: Em, userId: string, entity: string, role: Role): Promise<void> {
  checkName('entity', entity);
  // The membership's foreign key needs the entity row first. Inserted unless there, not looked up
  // first: two `users create` into one new entity at once would both find none, and the second
  // insert failed (PostgreSQL waits for the first's commit, then inserts nothing).
  await em.createQueryBuilder(EntityRecord).insert({ name: entity, createdAt: new Date() }).onConflict('name').ignore().execute();
  const existing = await em.findOne(Membership, { userId, entity });
  if (existing) existing.role = role;
  else em.create(Membership, { userId, entity, role, createdAt: new Date() });
  await em.flush();
}

/** `users create`: the user, optionally its entity and membership, and a first API key — atomically. */
export async function createUser(em: Em, username: string, options: { entity?: string; role?: Role }): Promise<CreatedKey> {
  checkName('username', username);
  if (username === 'api') throw new AdminError('username "api" is reserved: it is the generic username of Basic auth');
  return em.transactional(async (tx) => {
    if (await tx.findOne(User, { username })) throw new AdminError(`user "${username}" already exists`);
    const user = tx.create(User, { id: newId(), username, createdAt: new Date() });
    await tx.flush();
    if (options.entity) await upsertMembership(tx, user.id, options.entity, options.role ?? 'member');
    return addKey(tx, user);
  });
}

export async function createKey(em: Em, username: string): Promise<CreatedKey> {
  return em.transactional(async (tx) => addKey(tx, await userNamed(tx, username)));
}

export async function listKeys(em: Em, username: string) {
  const user = await userNamed(em, username);
  const keys = await em.find(ApiKey, { userId: user.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return keys.map((key) => ({
    key_id: key.id,
    created_at: key.createdAt.toISOString(),
    revoked_at: key.revokedAt ? key.revokedAt.toISOString() : null,
  }));
}

/** Revoking is immediate for every server process: each request looks its key up afresh. */
export async function revokeKey(em: Em, keyId: string): Promise<{ key_id: string; revoked_at: string }> {
  return em.transactional(async (tx) => {
    const key = await tx.findOne(ApiKey, { id: keyId });
    if (!key) throw new AdminError(`no API key with id "${keyId}"`);
    key.revokedAt ??= new Date();
    await tx.flush();
    return { key_id: key.id, revoked_at: key.revokedAt.toISOString() };
  });
}

export async function addMember(em: Em, username: string, entity: string, role: Role) {
  return em.transactional(async (tx) => {
    const user = await userNamed(tx, username);
    await upsertMembership(tx, user.id, entity, role);
    return { user_id: user.id, username, entity, role };
  });
}
