import type { Role } from '@loupe/shared';
import type { z } from 'zod';
import type { AuthUser } from '../domain/auth-user.ts';
import { forbidden } from '../domain/errors.ts';
import { protectedProcedure } from './trpc.ts';

// Procedures on the people of one entity (`entity` of the input, contract 5.12): its members are
// read by any of them; invitations, roles, removals and the audit log are its admins' business.
// Checked here, once, after the input is validated and before any work, as project access is
// (project-procedures.ts): an admin of one entity has no say in another.

export type EntityAccess = 'member' | 'admin';

export function requireEntityRole(user: AuthUser, entity: string, access: EntityAccess): Role {
  const role = user.roles.get(entity);
  if (!role) throw forbidden(`You are not a member of entity "${entity}".`);
  if (access === 'admin' && role !== 'admin') throw forbidden(`Your role in entity "${entity}" is ${role}; only its admins may do this.`);
  return role;
}

export function entityProcedure<Input extends z.ZodType<{ entity: string }>>(access: EntityAccess, input: Input) {
  return protectedProcedure.input(input).use(({ ctx, input: parsed, next }) => {
    requireEntityRole(ctx.user, parsed.entity, access);
    return next();
  });
}
