import { sqlDate, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { splitProjectId, type Role } from '@loupe/shared';
import type { AuthUser } from './auth-user.ts';
import { forbidden } from './errors.ts';

/**
 * What a procedure does with a project's data, and so which roles may call it (contract 3, 5.11):
 * - `read`: admins, members and viewers (not annotators: a read open to them says so, below);
 * - `write`: admins and members;
 * - `annotate`: the work of annotating (claim, progress, feedback): admins, members, annotators;
 * - `read-blind`: any role; an annotator's answer is narrowed by the procedure to the queues open
 *   to them and to their own work (domain/queue-access.ts).
 * Anything new is `read` or `write` unless it is made for annotators, so annotators are refused by default.
 */
export type Access = 'read' | 'write' | 'annotate' | 'read-blind';

const ALLOWED: Record<Access, readonly Role[]> = {
  read: ['admin', 'member', 'viewer'],
  write: ['admin', 'member'],
  annotate: ['admin', 'member', 'annotator'],
  'read-blind': ['admin', 'member', 'annotator', 'viewer'],
};

/** The caller's role in the project's entity, when it allows `access`; else 403. */
export function requireProjectAccess(user: AuthUser, projectId: string, access: Access): Role {
  const { entity } = splitProjectId(projectId);
  const role = user.roles.get(entity);
  if (!role) throw forbidden(`You are not a member of entity "${entity}".`);
  if (!ALLOWED[access].includes(role)) {
    if (role === 'viewer') throw forbidden(`Your role in entity "${entity}" is viewer, which cannot write.`);
    throw forbidden(`Your role in entity "${entity}" is annotator, which works the annotation queues open to it and nothing else.`);
  }
  return role;
}

/** Whether the caller works the project as an annotator: blind to other annotators' work (5.11). */
export function isAnnotatorIn(user: AuthUser, projectId: string): boolean {
  return user.roles.get(splitProjectId(projectId).entity) === 'annotator';
}

/** Projects come into being on their first write (on the write paths: the `sql` template). */
export async function ensureProject(db: SqlScope, projectId: string): Promise<void> {
  const { entity, project } = splitProjectId(projectId);
  await sqlRun(db, sql`insert into projects (id, entity, name, created_at) values (${projectId}, ${entity}, ${project}, ${sqlDate(db, new Date())}) on conflict (id) do nothing`);
}
