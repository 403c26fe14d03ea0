import { z } from 'zod';

/**
 * Roles in an entity (contract 3): admins and members read and write; annotators work the queues
 * open to them, blind to other annotators' work (5.11); viewers only read.
 */
export const ROLES = ['admin', 'member', 'annotator', 'viewer'] as const;
export const Role = z.enum(ROLES);
export type Role = z.infer<typeof Role>;

export const Me = z
  .strictObject({
    user_id: z.string(),
    username: z.string(),
    memberships: z.array(z.strictObject({ entity: z.string(), role: Role })),
  })
  .meta({ id: 'Me' });
export type Me = z.infer<typeof Me>;
