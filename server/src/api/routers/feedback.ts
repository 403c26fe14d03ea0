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
import { router } from '../trpc.ts';
import { answerNewRecords } from '../new-records.ts';
import { projectBatchProcedure, projectProcedure } from '../project-procedures.ts';
import { rest } from '../rest-meta.ts';

const tags = ['feedback'];

export const feedbackRouter = router({
  batchCreate: projectBatchProcedure('write', FeedbackBatchCreateReq)
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
    .output(FeedbackBatchCreateRes)
    .mutation(async ({ ctx, input }) => ({
      res: answerNewRecords(
        ctx.res,
        await createFeedbackBatch(ctx.unitOfWork(), {
          userId: ctx.user.id,
          batch: input.batch,
          maxPayloadBytes: ctx.services.config.limits.payloadBytes,
          events: ctx.services.queueEvents,
        }),
      ),
    })),

  create: projectProcedure('write', FeedbackCreateReq)
    .meta(rest({ method: 'POST', path: '/feedback/create', tags, summary: 'Create one feedback record', answers: [409] }))
    .output(FeedbackCreateRes)
    .mutation(({ ctx, input }) => createFeedback(ctx.unitOfWork(), { userId: ctx.user.id, element: input, maxPayloadBytes: ctx.services.config.limits.payloadBytes, events: ctx.services.queueEvents })),

  query: projectProcedure('read', FeedbackQueryReq)
    .meta(rest({ method: 'POST', path: '/feedback/query', tags, summary: 'Query feedback, ordered by created_at, id' }))
    .output(FeedbackQueryRes)
    .query(async ({ ctx, input }) => {
      const page = await queryFeedback(ctx.db, input, resolvePaging(input, ctx.pageLimits));
      return { result: page.rows, next_cursor: page.nextCursor };
    }),

  purge: projectProcedure('write', FeedbackPurgeReq)
    .meta(rest({ method: 'POST', path: '/feedback/purge', tags, summary: 'Delete feedback records by id' }))
    .output(FeedbackPurgeRes)
    .mutation(async ({ ctx, input }) => ({ deleted_count: await purgeFeedback(ctx.db, input.project_id, input.ids) })),

  replace: projectProcedure('write', FeedbackReplaceReq)
    .meta(rest({ method: 'POST', path: '/feedback/replace', tags, summary: 'Replace one feedback record (purge and create in one transaction)', answers: [404, 409] }))
    .output(FeedbackCreateRes)
    .mutation(async ({ ctx, input }) => {
      const { feedback_id, ...element } = input;
      return replaceFeedback(ctx.unitOfWork(), {
        userId: ctx.user.id,
        element,
        feedbackId: feedback_id,
        maxPayloadBytes: ctx.services.config.limits.payloadBytes,
        events: ctx.services.queueEvents,
      });
    }),
});
