import { AnnotationSpecCreateReq, AnnotationSpecCreateRes, AnnotationSpecQueryReq, AnnotationSpecQueryRes } from '@loupe/shared';
import { createSpec, querySpecs } from '../../domain/annotation-specs.ts';
import { router } from '../trpc.ts';
import { projectProcedure } from '../project-procedures.ts';
import { rest } from '../rest-meta.ts';

export const annotationSpecsRouter = router({
  create: projectProcedure('write', AnnotationSpecCreateReq)
    .meta(rest({ method: 'POST', path: '/annotation_specs', tags: ['annotation specs'], summary: 'Store a rubric field (JSON Schema); same content, same ref' }))
    .output(AnnotationSpecCreateRes)
    .mutation(({ ctx, input }) => createSpec(ctx.unitOfWork(), ctx.user.id, input)),

  query: projectProcedure('read-blind', AnnotationSpecQueryReq)
    .meta(rest({ method: 'POST', path: '/annotation_specs/query', tags: ['annotation specs'], summary: 'Find specs by names or refs', description: 'Annotators read them too: the rubric they annotate by.' }))
    .output(AnnotationSpecQueryRes)
    .query(async ({ ctx, input }) => ({ specs: await querySpecs(ctx.unitOfWork(), input, ctx.services.config.limits.responseBytes) })),
});
