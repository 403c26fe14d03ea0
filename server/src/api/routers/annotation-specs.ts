import { AnnotationSpecCreateReq, AnnotationSpecCreateRes, AnnotationSpecQueryReq, AnnotationSpecQueryRes } from '@loupe/shared';
import { createSpec, querySpecs } from '../../domain/annotation-specs.ts';
import { protectedProcedure, router } from '../trpc.ts';
import { rest } from '../rest-meta.ts';

export const annotationSpecsRouter = router({
  create: protectedProcedure
    .meta(rest({ method: 'POST', path: '/annotation_specs', tags: ['annotation specs'], summary: 'Store a rubric field (JSON Schema); same content, same ref' }))
    .input(AnnotationSpecCreateReq)
    .output(AnnotationSpecCreateRes)
    .mutation(({ ctx, input }) => createSpec(ctx.unitOfWork(), ctx.user, input)),

  query: protectedProcedure
    .meta(rest({ method: 'POST', path: '/annotation_specs/query', tags: ['annotation specs'], summary: 'Find specs by names or refs' }))
    .input(AnnotationSpecQueryReq)
    .output(AnnotationSpecQueryRes)
    .query(async ({ ctx, input }) => ({ specs: await querySpecs(ctx.unitOfWork(), ctx.user, input, ctx.services.config.limits.responseBytes) })),
});
