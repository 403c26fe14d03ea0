import { ProjectQueryReq, ProjectQueryRes } from '@loupe/shared';
import { queryProjects } from '../../domain/projects.ts';
import { protectedProcedure, router } from '../trpc.ts';
import { rest } from '../rest-meta.ts';

export const projectsRouter = router({
  query: protectedProcedure
    .meta(rest({ method: 'POST', path: '/projects/query', tags: ['projects'], summary: "The projects of the caller's entities that hold data, with counts" }))
    .input(ProjectQueryReq)
    .output(ProjectQueryRes)
    .query(async ({ ctx, input }) => ({ projects: await queryProjects(ctx.db, ctx.user, input) })),
});
