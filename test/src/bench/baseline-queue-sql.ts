import { createHash, timingSafeEqual } from 'node:crypto';

// What both hand-written baselines of the queue writes share: the SQL Loupe runs for progress
// (contract 4.1) and claim (5.2) — the same statements, in the same order, written `?`-style —
// and the few pure steps around them (credentials, access, transition, the item's JSON).

export const ITEM_COLUMNS = `i.id, i.project_id, i.queue_id, i.call_id, i.call_started_at, i.call_ended_at, i.call_op_name,
  i.call_trace_id, i.display_fields, i.state, i.state_annotator_user_id, i.added_by, i.created_at, i.created_by,
  i.updated_at, i.deleted_at, i.assigned_user_id,
  (select case when i.coverage_point < rq.overlap_coverage then rq.annotations_per_item else 1 end from annotation_queues rq where rq.id = i.queue_id) as annotations_required`;

export const SQL = {
  auth: `select u.id as user_id, u.username, k.key_hash, m.entity, m.role
       from api_keys k
       join users u on u.id = k.user_id
       left join memberships m on m.user_id = u.id
      where k.key_hash = ? and k.revoked_at is null`,
  /** The item named in the path, with its queue's lease; PostgreSQL appends `for update of i`. */
  liveItem: `select ${ITEM_COLUMNS}, q.lease_seconds from annotation_queue_items i
       join annotation_queues q on q.id = i.queue_id
      where i.id = ? and i.queue_id = ? and i.project_id = ? and i.deleted_at is null and q.deleted_at is null`,
  progressState: 'select p.state from annotation_item_progress p where p.item_id = ? and p.annotator_user_id = ?',
  insertProgress: `insert into annotation_item_progress (item_id, annotator_user_id, queue_id, state, lease_expires_at, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?)`,
  updateProgress: 'update annotation_item_progress set state = ?, lease_expires_at = ?, updated_at = ? where item_id = ? and annotator_user_id = ?',
  showState: `update annotation_queue_items set state = ?, state_annotator_user_id = ?, state_updated_at = ?
      where id = ? and (state_updated_at is null or state_updated_at <= ?)`,
  liveQueue: 'select * from annotation_queues where id = ? and project_id = ? and deleted_at is null limit 1',
  advisoryLock: 'select pg_advisory_xact_lock(hashtextextended(?, 0))',
  ownLease: `select ${ITEM_COLUMNS} from annotation_item_progress p
         join annotation_queue_items i on i.id = p.item_id
        where p.queue_id = ? and p.annotator_user_id = ? and p.state = 'in_progress' and p.lease_expires_at > ?
          and i.deleted_at is null
        order by i.created_at, i.id limit 1`,
  /** The first free item in queue order; parameters: queue, annotator, now, annotations_per_item. */
  candidate: `select ${ITEM_COLUMNS} from annotation_queue_items i
            where i.queue_id = ? and i.deleted_at is null
              and not exists (select 1 from annotation_item_progress p where p.item_id = i.id and p.annotator_user_id = ?)
              and (select count(*) from annotation_item_progress p where p.item_id = i.id
                   and (p.state in ('completed', 'skipped') or (p.state = 'in_progress' and p.lease_expires_at > ?))) < ?
            order by i.created_at, i.id
            limit 1`,
  taken: `select count(*) as taken from annotation_item_progress p where p.item_id = ?
      and (p.state in ('completed', 'skipped') or (p.state = 'in_progress' and p.lease_expires_at > ?))`,
} as const;

/** The candidate query with items already passed over left out (a recount found them full). */
export function candidateExcluding(count: number): string {
  if (!count) return SQL.candidate;
  const exclusion = ` and i.id not in (${Array.from({ length: count }, () => '?').join(', ')})`;
  return SQL.candidate.replace('where i.queue_id = ? and i.deleted_at is null', `where i.queue_id = ? and i.deleted_at is null${exclusion}`);
}

/** `?` placeholders as PostgreSQL's `$1, $2, …`. */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

export type Reply = { status: number; body: unknown };
export const fail = (status: number, reason: string): Reply => ({ status, body: { reason } });

export type Credentials = { username: string | null; key: string; hash: string };

export function credentialsOf(header: string | undefined): Credentials | null {
  const [scheme, value] = header?.split(' ', 2) ?? [];
  if (!scheme || !value) return null;
  const hash = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');
  if (scheme.toLowerCase() === 'bearer') return { username: null, key: value, hash: hash(value) };
  if (scheme.toLowerCase() !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const key = colon < 0 ? '' : decoded.slice(colon + 1);
  return key ? { username: decoded.slice(0, colon), key, hash: hash(key) } : null;
}

export type AuthRow = { user_id: string; username: string; key_hash: string; entity: string | null; role: string | null };
export type User = { id: string; roles: Map<string, string> };

/** The user of the auth query's rows, checked as Loupe checks it (constant-time hash, username). */
export function userOf(rows: readonly AuthRow[], credentials: Credentials): User | null {
  const first = rows[0];
  if (!first || !timingSafeEqual(Buffer.from(first.key_hash), Buffer.from(credentials.hash))) return null;
  if (credentials.username !== null && credentials.username !== 'api' && credentials.username !== first.username) return null;
  const roles = new Map<string, string>();
  for (const row of rows) if (row.entity && row.role) roles.set(row.entity, row.role);
  return { id: first.user_id, roles };
}

/** Null when the user may write to the project, else the refusal. */
export function writeRefusal(user: User, projectId: unknown): Reply | null {
  if (typeof projectId !== 'string' || !projectId.includes('/')) return fail(400, 'project_id must be "<entity>/<project>"');
  const role = user.roles.get(projectId.slice(0, projectId.indexOf('/')));
  return role && role !== 'viewer' ? null : fail(403, 'no write access to this project');
}

export const STATES = new Set(['in_progress', 'completed', 'skipped']);

export function transition(current: string | null, requested: string): 'insert' | 'update' | 'none' | Reply {
  if (current === null) return 'insert';
  if (current === requested) return 'none';
  if (current === 'in_progress') return 'update';
  return fail(400, `invalid state transition from ${current} to ${requested}`);
}

const iso = (value: unknown): string => (value instanceof Date ? value : new Date(typeof value === 'string' ? value : Number(value))).toISOString();
const isoOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : iso(value));

/** The item as the contract's AnnotationQueueItem, from a row of either driver. */
export function itemJson(row: Record<string, unknown>, overrides: { state?: string; annotator?: string } = {}) {
  return {
    id: row.id,
    project_id: row.project_id,
    queue_id: row.queue_id,
    call_id: row.call_id,
    call_started_at: iso(row.call_started_at),
    call_ended_at: isoOrNull(row.call_ended_at),
    call_op_name: row.call_op_name,
    call_trace_id: row.call_trace_id,
    display_fields: typeof row.display_fields === 'string' ? JSON.parse(row.display_fields) : row.display_fields,
    annotation_state: overrides.state ?? row.state,
    annotator_user_id: overrides.annotator ?? row.state_annotator_user_id ?? null,
    added_by: row.added_by,
    created_at: iso(row.created_at),
    created_by: row.created_by,
    updated_at: iso(row.updated_at),
    deleted_at: isoOrNull(row.deleted_at),
    position_in_queue: null,
    assigned_user_id: row.assigned_user_id ?? null,
    annotations_required: Number(row.annotations_required),
  };
}

export const leaseEnd = (now: Date, state: string, leaseSeconds: number): Date | null =>
  state === 'in_progress' ? new Date(now.getTime() + leaseSeconds * 1000) : null;

export const MAX_CLAIM_ATTEMPTS = 50;
