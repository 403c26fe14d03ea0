import { CallBatchCreateReq, CallBatchCreateRes, CallQueryReq, CallQueryRes, CallReadReq, CallReadRes } from '@loupe/shared';
import { createCalls, queryCalls, readCall } from '../../domain/calls.ts';
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

  read: projectProcedure('read', CallReadReq)
    .meta(rest({ method: 'GET', path: '/calls/{call_id}', tags: ['calls'], summary: 'Read one call', answers: [404, 413] }))
    .output(CallReadRes)
    .query(async ({ ctx, input }) => ({ call: await readCall(ctx.db, { projectId: input.project_id, callId: input.call_id, limits: ctx.pageLimits }) })),

  query: projectProcedure('read', CallQueryReq)
    .meta(rest({ method: 'POST', path: '/calls/query', tags: ['calls'], summary: 'Query calls, ordered by started_at, id' }))
    .output(CallQueryRes)
    .query(async ({ ctx, input }) => {
      const page = await queryCalls(ctx.db, input, resolvePaging(input, ctx.pageLimits));
      return { calls: page.rows, next_cursor: page.nextCursor };
    }),
});
