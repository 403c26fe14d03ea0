import type { OwnApiKey } from '@loupe/shared';
import { generateApiKey } from './api-keys.ts';
import { isoFromSql, sqlDate, sqlRows, sqlRun, sqlTransaction, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { entitiesOfUser, recordAudit, type Actor } from '../domain/audit-log.ts';
import { notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';

// A person's own API keys (contract 5.12), for the programs they run: made, listed (never the
// key, which is not kept) and revoked by their owner. Each is in the audit log of the owner's entities.

type KeyRow = { id: string; name: string | null; created_at: unknown };
const toDto = (row: KeyRow): OwnApiKey => ({ id: row.id, name: row.name, created_at: isoFromSql(row.created_at) });

type Owner = { actor: NonNullable<Actor>; client: string | null };

export async function createOwnApiKey(db: SqlScope, { name, actor, client }: Owner & { name: string }): Promise<{ api_key: OwnApiKey; key: string }> {
  const { key, hash } = generateApiKey();
  const id = newId();
  const now = new Date();
  return sqlTransaction(db, async (tx) => {
    await sqlRun(tx, sql`insert into api_keys (id, user_id, key_hash, name, created_at) values (${id}, ${actor.userId}, ${hash}, ${name}, ${sqlDate(tx, now)})`);
    await recordAudit(tx, await entitiesOfUser(tx, actor.userId), { action: 'api_key_created', actor, client, detail: { key_id: id, name } });
    return { api_key: { id, name, created_at: now.toISOString() }, key };
  });
}

/** The caller's live keys, oldest first. */
export async function queryOwnApiKeys(db: SqlScope, userId: string): Promise<OwnApiKey[]> {
  const rows = await sqlRows<KeyRow>(db, sql`select id, name, created_at from api_keys where user_id = ${userId} and revoked_at is null order by created_at, id`);
  return rows.map(toDto);
}

/** Revokes one of the caller's keys at once (every request looks its key up afresh); another's, or one revoked, is 404. */
export async function revokeOwnApiKey(db: SqlScope, { id, actor, client }: Owner & { id: string }): Promise<OwnApiKey> {
  return sqlTransaction(db, async (tx) => {
    const [row] = await sqlRows<KeyRow>(tx, sql`select id, name, created_at from api_keys where id = ${id} and user_id = ${actor.userId} and revoked_at is null`);
    if (!row) throw notFound(`You have no live API key "${id}".`);
    await sqlRun(tx, sql`update api_keys set revoked_at = ${sqlDate(tx, new Date())} where id = ${id}`);
    await recordAudit(tx, await entitiesOfUser(tx, actor.userId), { action: 'api_key_revoked', actor, client, detail: { key_id: id, name: row.name } });
    return toDto(row);
  });
}
