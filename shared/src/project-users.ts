import { z } from 'zod';
import { Role } from './me.ts';
import { ProjectId } from './project.ts';

/** At most this many user ids per request: a page's annotators fit many times over. */
export const PROJECT_USERS_MAX_IDS = 1000;

export const ProjectUsersReq = z
  .strictObject({
    project_id: ProjectId,
    user_ids: z
      .array(z.string().min(1).max(128))
      .max(PROJECT_USERS_MAX_IDS)
      .meta({ description: `User ids that the project's data mentions (at most ${PROJECT_USERS_MAX_IDS}; repeats are answered once)` }),
  })
  .meta({ id: 'ProjectUsersReq' });
export type ProjectUsersReq = z.infer<typeof ProjectUsersReq>;

export const ProjectUser = z.strictObject({ user_id: z.string(), username: z.string() }).meta({ id: 'ProjectUser' });
export type ProjectUser = z.infer<typeof ProjectUser>;

export const ProjectUsersRes = z
  .strictObject({
    users: z.array(ProjectUser).meta({
      description: 'The resolvable ids among those asked, in the order asked; an id that is unknown or has nothing to do with the project is left out',
    }),
  })
  .meta({ id: 'ProjectUsersRes' });
export type ProjectUsersRes = z.infer<typeof ProjectUsersRes>;

/** At most this many members per answer (an entity's people; as many as a queue may have assignees). */
export const PROJECT_MEMBERS_MAX = 1000;

export const ProjectMembersReq = z.strictObject({ project_id: ProjectId }).meta({ id: 'ProjectMembersReq' });
export type ProjectMembersReq = z.infer<typeof ProjectMembersReq>;

export const ProjectMember = z
  .strictObject({ user_id: z.string(), username: z.string(), role: Role })
  .meta({ id: 'ProjectMember' });
export type ProjectMember = z.infer<typeof ProjectMember>;

export const ProjectMembersRes = z
  .strictObject({
    members: z.array(ProjectMember).meta({ description: `The members of the project's entity with their roles, by username (at most ${PROJECT_MEMBERS_MAX})` }),
  })
  .meta({ id: 'ProjectMembersRes' });
export type ProjectMembersRes = z.infer<typeof ProjectMembersRes>;
