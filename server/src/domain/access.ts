import { sqlDate, sqlRun, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { splitProjectId } from '@loupe/shared';
import type { AuthUser } from './auth-user.ts';
import { forbidden } from './errors.ts';

export type Access = 'read' | 'write';

/** Members and admins read and write; viewers only read; anyone else is refused. */
export function requireProjectAccess(user: AuthUser, projectId: string, access: Access): void {
  const { entity } = splitProjectId(projectId);
  const role = user.roles.get(entity);
  if (!role) throw forbidden(`You are not a member of entity "${entity}".`);
  if (access === 'write' && role === 'viewer') {
    throw forbidden(`Your role in entity "${entity}" is viewer, which cannot write.`);
  }
}

/** Projects come into being on their first write (on the write paths: the `sql` template). */
export async function ensureProject(db: SqlScope, projectId: string): Promise<void> {
  const { entity, project } = splitProjectId(projectId);
  await sqlRun(db, sql`insert into projects (id, entity, name, created_at) values (${projectId}, ${entity}, ${project}, ${sqlDate(db, new Date())}) on conflict (id) do nothing`);
}
