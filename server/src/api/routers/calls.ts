import { CallBatchCreateReq, CallBatchCreateRes, CallQueryReq, CallQueryRes, CallReadReq, CallReadRes } from '@loupe/shared';
import { createCalls, queryCalls, queryCallsOfQueues, readCall } from '../../domain/calls.ts';
import { isAnnotatorIn } from '../../domain/access.ts';
import { queuesOpenTo } from '../../domain/queue-access.ts';
import { resolvePaging } from '../../domain/paging.ts';
import { router } from '../trpc.ts';
import { answerNewRecords } from '../new-records.ts';
import { projectBatchProcedure, projectProcedure } from '../project-procedures.ts';
import { rest } from '../rest-meta.ts';

export const callsRouter = router({
  batchCreate: projectBatchProcedure('write', CallBatchCreateReq)
    .meta(rest({ method: 'POST', path: '/calls/batch/create', tags: ['calls'], summary: 'Store recorded calls, all or nothing; idempotent by id', answers: [409] }))
    .output(CallBatchCreateRes)
    .mutation(async ({ ctx, input }) => ({ res: answerNewRecords(ctx.res, await createCalls(ctx.db, { userId: ctx.user.id, batch: input.batch, events: ctx.services.queueEvents })) })),

  read: projectProcedure('read-blind', CallReadReq)
    .meta(
      rest({
        method: 'GET',
        path: '/calls/{call_id}',
        tags: ['calls'],
        summary: 'Read one call',
        description: "An annotator reads the calls of the items of the queues open to them.",
        answers: [404, 413],
      }),
    )
    .output(CallReadRes)
    .query(async ({ ctx, input }) => {
      const onlyOfQueues = isAnnotatorIn(ctx.user, input.project_id) ? await queuesOpenTo(ctx.db, { userId: ctx.user.id, projectId: input.project_id }) : undefined;
      return { call: await readCall(ctx.db, { projectId: input.project_id, callId: input.call_id, limits: ctx.pageLimits, ...(onlyOfQueues ? { onlyOfQueues } : {}) }) };
    }),

  query: projectProcedure('read-blind', CallQueryReq)
    .meta(
      rest({
        method: 'POST',
        path: '/calls/query',
        tags: ['calls'],
        summary: 'Query calls, ordered by started_at, id',
        description: "An annotator's query answers the calls of the items of the queues open to them.",
      }),
    )
    .output(CallQueryRes)
    .query(async ({ ctx, input }) => {
      const page = resolvePaging(input, ctx.pageLimits);
      const found = isAnnotatorIn(ctx.user, input.project_id)
        ? await queryCallsOfQueues(ctx.db, { query: input, page, queueIds: await queuesOpenTo(ctx.db, { userId: ctx.user.id, projectId: input.project_id }) })
        : await queryCalls(ctx.db, input, page);
      return { calls: found.rows, next_cursor: found.nextCursor };
    }),
});
