import {
  QueueRuleCreateReq,
  QueueRulePreviewReq,
  QueueRulePreviewRes,
  QueueRuleQueryReq,
  QueueRuleQueryRes,
  QueueRuleRef,
  QueueRuleRes,
  QueueRuleUpdateReq,
} from '@loupe/shared';
import { createRule, deleteRule, previewRule, queryRules, updateRule } from '../../domain/queue-rules.ts';
import { router } from '../trpc.ts';
import { projectProcedure } from '../project-procedures.ts';
import { rest } from '../rest-meta.ts';

const tags = ['queue rules'];
const base = '/annotation_queues/{queue_id}/rules';

/** Queue rules (contract 5.10): members write them, viewers read them. */
export const queueRulesRouter = router({
  create: projectProcedure('write', QueueRuleCreateReq)
    .meta(
      rest({
        method: 'POST',
        path: base,
        tags,
        summary: 'Create a rule that adds matching calls to the queue',
        description:
          'trigger "call": calls stored from now on that match `filter` (a CallFilter) and are sampled are added in the transaction that stores them. ' +
          'trigger "feedback": the call a new matching feedback record names is added in the feedback\'s transaction. ' +
          '`backfill_since` also considers, in the background, the calls already stored that started at or after it.',
        answers: [404],
      }),
    )
    .output(QueueRuleRes)
    .mutation(async ({ ctx, input }) => ({
      rule: await createRule(ctx.unitOfWork(), { req: input, userId: ctx.user.id, limits: ctx.services.config.rules }).finally(() => ctx.services.ruleBackfills.wake()),
    })),

  query: projectProcedure('read', QueueRuleQueryReq)
    .meta(rest({ method: 'POST', path: `${base}/query`, tags, summary: 'List the rules of a queue, oldest first, with their stats and backfill', answers: [404, 413] }))
    .output(QueueRuleQueryRes)
    .query(async ({ ctx, input }) => ({
      rules: await queryRules(ctx.db, { projectId: input.project_id, queueId: input.queue_id, budget: ctx.pageLimits.responseBytes }),
    })),

  preview: projectProcedure('read', QueueRulePreviewReq)
    .meta(
      rest({
        method: 'POST',
        path: `${base}/preview`,
        tags,
        summary: 'Count the stored calls a call rule would match and add, writing nothing',
        description: 'Scans at most the newest LOUPE_RULE_PREVIEW_SCAN_LIMIT calls of the range (the filter\'s times and `since`); `scan_limit_reached` says when more lie in it.',
        answers: [404],
      }),
    )
    .output(QueueRulePreviewRes)
    .query(({ ctx, input }) => previewRule(ctx.db, { req: input, scanLimit: ctx.services.config.rules.previewScanLimit })),

  update: projectProcedure('write', QueueRuleUpdateReq)
    .meta(rest({ method: 'PUT', path: `${base}/{rule_id}`, tags, summary: 'Change a rule (fields left out stay); backfill_since starts a new backfill', answers: [404] }))
    .output(QueueRuleRes)
    .mutation(async ({ ctx, input }) => ({ rule: await updateRule(ctx.unitOfWork(), input).finally(() => ctx.services.ruleBackfills.wake()) })),

  delete: projectProcedure('write', QueueRuleRef)
    .meta(rest({ method: 'DELETE', path: `${base}/{rule_id}`, tags, summary: 'Delete a rule (it stops; the items it added stay)', answers: [404] }))
    .output(QueueRuleRes)
    .mutation(async ({ ctx, input }) => ({ rule: await deleteRule(ctx.db, { projectId: input.project_id, queueId: input.queue_id, ruleId: input.rule_id }) })),
});
