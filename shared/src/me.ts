import { z } from 'zod';

export const ROLES = ['admin', 'member', 'viewer'] as const;
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
