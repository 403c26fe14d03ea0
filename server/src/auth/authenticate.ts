import { timingSafeEqual } from 'node:crypto';
import type { Role } from '@loupe/shared';
import { sqlRows, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { hashApiKey } from './api-keys.ts';
import type { Credentials } from './credentials.ts';
import type { AuthUser } from '../domain/auth-user.ts';


type Row = { key_id: string; user_id: string; username: string; key_hash: string; entity: string | null; role: Role | null };

/** The user behind a live (not revoked) API key, or null. One round trip to the database; on every request, so in the `sql` template. */
export async function authenticate(db: SqlScope, credentials: Credentials): Promise<AuthUser | null> {
  const hash = hashApiKey(credentials.key);
  const rows = await sqlRows<Row>(db,
    sql`select k.id as key_id, u.id as user_id, u.username, k.key_hash, m.entity, m.role
       from api_keys k
       join users u on u.id = k.user_id
       left join memberships m on m.user_id = u.id
      where k.key_hash = ${hash} and k.revoked_at is null`,
  );
  const first = rows[0];
  // The index lookup found the row by its hash; compare once more in constant time so that no
  // code path of ours branches on a partial match.
  if (!first || !timingSafeEqual(Buffer.from(first.key_hash), Buffer.from(hash))) return null;
  if (credentials.username !== null && credentials.username !== 'api' && credentials.username !== first.username) {
    return null;
  }
  const roles = new Map<string, Role>();
  for (const row of rows) if (row.entity && row.role) roles.set(row.entity, row.role);
  return { id: first.user_id, username: first.username, keyId: first.key_id, via: 'key', roles };
}
