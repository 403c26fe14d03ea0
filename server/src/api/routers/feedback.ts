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
import { isAnnotatorIn } from '../../domain/access.ts';
import { requireFeedbackQueueAccess } from '../../domain/queue-access.ts';
import { router } from '../trpc.ts';
import { answerNewRecords } from '../new-records.ts';
import { projectBatchProcedure, projectProcedure } from '../project-procedures.ts';
import { rest } from '../rest-meta.ts';

const tags = ['feedback'];

export const feedbackRouter = router({
  batchCreate: projectBatchProcedure('annotate', FeedbackBatchCreateReq)
    .meta(
      rest({
        method: 'POST',
        path: '/feedback/batch/create',
        tags,
        summary: 'Create feedback records, all or nothing; idempotent by id',
        description:
          'svc_user_id is always the authenticated caller; a value in the body is ignored. svc.annotation.* records naming an assigned queue come from its ' +
          'assignees; an annotator\'s records each name a queue open to them.',
        answers: [409],
      }),
    )
    .output(FeedbackBatchCreateRes)
    .mutation(async ({ ctx, input }) => {
      await requireFeedbackQueueAccess(ctx.db, { user: ctx.user, elements: input.batch, where: (index) => `batch[${index}].` });
      return {
      res: answerNewRecords(
        ctx.res,
        await createFeedbackBatch(ctx.unitOfWork(), {
          userId: ctx.user.id,
          batch: input.batch,
          maxPayloadBytes: ctx.services.config.limits.payloadBytes,
          events: ctx.services.queueEvents,
        }),
      ),
      };
    }),

  create: projectProcedure('annotate', FeedbackCreateReq)
    .meta(rest({ method: 'POST', path: '/feedback/create', tags, summary: 'Create one feedback record', description: 'The rules of feedback/batch/create.', answers: [409] }))
    .output(FeedbackCreateRes)
    .mutation(async ({ ctx, input }) => {
      await requireFeedbackQueueAccess(ctx.db, { user: ctx.user, elements: [input], where: () => '' });
      return createFeedback(ctx.unitOfWork(), { userId: ctx.user.id, element: input, maxPayloadBytes: ctx.services.config.limits.payloadBytes, events: ctx.services.queueEvents });
    }),

  query: projectProcedure('read-blind', FeedbackQueryReq)
    .meta(rest({ method: 'POST', path: '/feedback/query', tags, summary: 'Query feedback, ordered by created_at, id', description: "An annotator's query answers their own records only." }))
    .output(FeedbackQueryRes)
    .query(async ({ ctx, input }) => {
      let req = input;
      if (isAnnotatorIn(ctx.user, input.project_id)) {
        // An annotator reads only their own records (5.11): asked for another user's, none.
        if (input.filter?.svc_user_id !== undefined && input.filter.svc_user_id !== ctx.user.id) return { result: [], next_cursor: null };
        req = { ...input, filter: { ...input.filter, svc_user_id: ctx.user.id } };
      }
      const page = await queryFeedback(ctx.db, req, resolvePaging(req, ctx.pageLimits));
      return { result: page.rows, next_cursor: page.nextCursor };
    }),

  purge: projectProcedure('annotate', FeedbackPurgeReq)
    .meta(rest({ method: 'POST', path: '/feedback/purge', tags, summary: 'Delete feedback records by id', description: 'An annotator deletes only their own records.' }))
    .output(FeedbackPurgeRes)
    .mutation(async ({ ctx, input }) => ({
      deleted_count: await purgeFeedback(ctx.db, {
        projectId: input.project_id,
        ids: input.ids,
        ...(isAnnotatorIn(ctx.user, input.project_id) ? { ownOnlyOf: ctx.user.id } : {}),
      }),
    })),

  replace: projectProcedure('annotate', FeedbackReplaceReq)
    .meta(
      rest({
        method: 'POST',
        path: '/feedback/replace',
        tags,
        summary: 'Replace one feedback record (purge and create in one transaction)',
        description: 'The replacement follows the rules of feedback/create; an annotator replaces only their own records.',
        answers: [404, 409],
      }),
    )
    .output(FeedbackCreateRes)
    .mutation(async ({ ctx, input }) => {
      const { feedback_id, ...element } = input;
      await requireFeedbackQueueAccess(ctx.db, { user: ctx.user, elements: [element], where: () => '' });
      return replaceFeedback(ctx.unitOfWork(), {
        userId: ctx.user.id,
        element,
        feedbackId: feedback_id,
        maxPayloadBytes: ctx.services.config.limits.payloadBytes,
        ownOnly: isAnnotatorIn(ctx.user, input.project_id),
        events: ctx.services.queueEvents,
      });
    }),
});
