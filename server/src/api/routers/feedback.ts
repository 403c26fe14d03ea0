import {
  FeedbackBatchCreateReq,
  FeedbackBatchCreateRes,
  FeedbackCreateReq,
  FeedbackCreateRes,
  FeedbackPurgeReq,
  FeedbackPurgeRes,
  FeedbackQueryReq,
  FeedbackQueryRes,
  FeedbackReplaceReq,
} from '@loupe/shared';
import { createFeedback, createFeedbackBatch, purgeFeedback, queryFeedback, replaceFeedback } from '../../domain/feedback.ts';
import { resolvePaging } from '../../domain/paging.ts';
import { batchLimited, protectedProcedure, router } from '../trpc.ts';
import { rest } from '../rest-meta.ts';

const tags = ['feedback'];

export const feedbackRouter = router({
  batchCreate: batchLimited
    .meta(
      rest({
        method: 'POST',
        path: '/feedback/batch/create',
        tags,
        summary: 'Create feedback records, all or nothing; idempotent by id',
        description: 'svc_user_id is always the authenticated caller; a value in the body is ignored.',
        answers: [409],
      }),
    )
    .input(FeedbackBatchCreateReq)
    .output(FeedbackBatchCreateRes)
    .mutation(async ({ ctx, input }) => ({
      res: await createFeedbackBatch(ctx.unitOfWork(), ctx.user, input.batch, ctx.services.config.limits.payloadBytes),
    })),

  create: protectedProcedure
    .meta(rest({ method: 'POST', path: '/feedback/create', tags, summary: 'Create one feedback record', answers: [409] }))
    .input(FeedbackCreateReq)
    .output(FeedbackCreateRes)
    .mutation(({ ctx, input }) => createFeedback(ctx.unitOfWork(), ctx.user, input, ctx.services.config.limits.payloadBytes)),

  query: protectedProcedure
    .meta(rest({ method: 'POST', path: '/feedback/query', tags, summary: 'Query feedback, ordered by created_at, id' }))
    .input(FeedbackQueryReq)
    .output(FeedbackQueryRes)
    .query(async ({ ctx, input }) => {
      const page = await queryFeedback(ctx.db, ctx.user, input, resolvePaging(input, ctx.pageLimits));
      return { result: page.rows, next_cursor: page.nextCursor };
    }),

  purge: protectedProcedure
    .meta(rest({ method: 'POST', path: '/feedback/purge', tags, summary: 'Delete feedback records by id' }))
    .input(FeedbackPurgeReq)
    .output(FeedbackPurgeRes)
    .mutation(async ({ ctx, input }) => ({ deleted_count: await purgeFeedback(ctx.db, ctx.user, input.project_id, input.ids) })),

  replace: protectedProcedure
    .meta(rest({ method: 'POST', path: '/feedback/replace', tags, summary: 'Replace one feedback record (purge and create in one transaction)', answers: [404, 409] }))
    .input(FeedbackReplaceReq)
    .output(FeedbackCreateRes)
    .mutation(async ({ ctx, input }) => {
      const { feedback_id, ...element } = input;
      return replaceFeedback(ctx.unitOfWork(), ctx.user, element, feedback_id, ctx.services.config.limits.payloadBytes);
    }),
});
