import type { Role } from '@loupe/shared';
import { typedKysely, type SqlScope } from '../db/sql.ts';
import { requireProjectAccess } from '../domain/access.ts';
import { DomainError } from '../domain/errors.ts';
import type { Logger } from '../log.ts';
import type { StreamSlots } from './stream-slots.ts';

/** Keys looked up per statement: far below every driver's parameter limit. */
const KEYS_PER_QUERY = 500;

/**
 * Checks every `everyMs` that each open event stream's key is still live and still may read its
 * project, and ends those that may not with the refusal a new request would get (401, 403): a
 * stream is authenticated when it opens, and without this would go on delivering until its
 * renewal. One check at a time; its cost is one query per 500 distinct keys of the open streams
 * (at most LOUPE_EVENT_STREAMS_PER_PROCESS). Returns what stops the checks.
 */
export function checkStreamAccessPeriodically(db: SqlScope, slots: StreamSlots, everyMs: number, log: Logger): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    checkStreamAccess(db, slots)
      .catch((error: unknown) => log.warn({ err: error }, 'event stream access check failed; streams go on until the next check'))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** One check of every open stream; resolves with how many it ended. */
const SESSION_PREFIX = 'session:';

export async function checkStreamAccess(db: SqlScope, slots: StreamSlots): Promise<number> {
  const streams = slots.streams();
  if (streams.length === 0) return 0;
  const ids = [...new Set(streams.map((stream) => stream.keyId))];
  // A stream opened with a session cookie is named `session:<id>` (auth/sessions.ts).
  const keyIds = ids.filter((id) => !id.startsWith(SESSION_PREFIX));
  const sessionIds = ids.filter((id) => id.startsWith(SESSION_PREFIX)).map((id) => id.slice(SESSION_PREFIX.length));
  // Live keys and sessions only, with their user's roles by entity.
  const roles = new Map<string, Map<string, Role>>();
  const keep = (id: string, entity: string | null, role: string | null) => {
    const byEntity = roles.get(id) ?? new Map<string, Role>();
    roles.set(id, byEntity);
    if (entity && role) byEntity.set(entity, role as Role);
  };
  for (let i = 0; i < keyIds.length; i += KEYS_PER_QUERY) {
    const chunk = keyIds.slice(i, i + KEYS_PER_QUERY);
    const rows = await typedKysely(db)
      .selectFrom('api_keys as k')
      .leftJoin('memberships as m', 'm.user_id', 'k.user_id')
      .select(['k.id', 'm.entity', 'm.role'])
      .where('k.revoked_at', 'is', null)
      .where('k.id', 'in', chunk)
      .execute();
    for (const row of rows) keep(row.id, row.entity, row.role);
  }
  for (let i = 0; i < sessionIds.length; i += KEYS_PER_QUERY) {
    const chunk = sessionIds.slice(i, i + KEYS_PER_QUERY);
    const rows = await typedKysely(db)
      .selectFrom('sessions as s')
      .leftJoin('memberships as m', 'm.user_id', 's.user_id')
      .select(['s.id', 'm.entity', 'm.role'])
      .where('s.expires_at', '>', new Date())
      .where('s.id', 'in', chunk)
      .execute();
    for (const row of rows) keep(SESSION_PREFIX + row.id, row.entity, row.role);
  }
  let ended = 0;
  for (const stream of streams) {
    const byEntity = roles.get(stream.keyId);
    try {
      if (!byEntity) throw new DomainError('unauthenticated', 'The API key or session of this event stream was revoked or ended.');
      requireProjectAccess({ id: '', username: '', keyId: stream.keyId, via: 'key', roles: byEntity }, stream.projectId, stream.access);
    } catch (error) {
      stream.fail(error as DomainError);
      ended++;
    }
  }
  return ended;
}
