import { ProjectMembersReq, ProjectMembersRes, ProjectQueryReq, ProjectQueryRes, ProjectUsersReq, ProjectUsersRes } from '@loupe/shared';
import { projectMembers, projectUsers } from '../../domain/project-users.ts';
import { queryProjects } from '../../domain/projects.ts';
import { protectedProcedure, router } from '../trpc.ts';
import { projectProcedure } from '../project-procedures.ts';
import { rest } from '../rest-meta.ts';

export const projectsRouter = router({
  query: protectedProcedure
    .meta(rest({ method: 'POST', path: '/projects/query', tags: ['projects'], summary: "The projects of the caller's entities that hold data, with counts" }))
    .input(ProjectQueryReq)
    .output(ProjectQueryRes)
    .query(async ({ ctx, input }) => ({ projects: await queryProjects(ctx.db, { user: ctx.user, req: input, budget: ctx.services.config.limits.responseBytes }) })),

  users: projectProcedure('read-blind', ProjectUsersReq)
    .meta(
      rest({
        method: 'POST',
        path: '/projects/users',
        tags: ['projects'],
        summary: "Usernames of the user ids a project's data mentions",
        description:
          'For whoever may read the project (viewers and annotators too). Names members of its entity and users whose progress or feedback ' +
          'is recorded in it; any other id, unknown or unrelated, is left out of the answer. At most 1,000 ids.',
      }),
    )
    .output(ProjectUsersRes)
    .query(async ({ ctx, input }) => ({ users: await projectUsers(ctx.db, input) })),

  members: projectProcedure('read', ProjectMembersReq)
    .meta(
      rest({
        method: 'POST',
        path: '/projects/members',
        tags: ['projects'],
        summary: "The members of a project's entity with their roles",
        description: 'For admins, members and viewers of the project (not annotators): the people a queue may be assigned to are among them. By username, at most 1,000.',
      }),
    )
    .output(ProjectMembersRes)
    .query(async ({ ctx, input }) => ({ members: await projectMembers(ctx.db, input) })),
});
