import type { Me } from './api.ts';

export type Role = Me['memberships'][number]['role'];

/** The caller's role in the entity of a project, or null when not a member. */
export function roleIn(me: Me | undefined, projectId: string): Role | null {
  const entity = projectId.split('/')[0];
  return me?.memberships.find((membership) => membership.entity === entity)?.role ?? null;
}

/** Whether that role may change a project's data (viewers only read). */
export function canWrite(role: Role | null): boolean {
  return role === 'admin' || role === 'member';
}

/** Whether that role may work the project's queues (claim, annotate): everyone but viewers (contract 5.11). */
export function canAnnotate(role: Role | null): boolean {
  return role === 'admin' || role === 'member' || role === 'annotator';
}

/**
 * Whether the caller is an annotator and nothing else: their home is "My queues", and the
 * pages that manage or read a project's data are not theirs.
 */
export function annotatorOnly(me: Me | undefined): boolean {
  return !!me?.memberships.length && me.memberships.every((membership) => membership.role === 'annotator');
}
