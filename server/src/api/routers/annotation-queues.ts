import {
  AnnotationProjectEventsReq,
  AnnotationQueueAgreementReq,
  AnnotationQueueAgreementRes,
  AnnotationQueueClaimReq,
  AnnotationQueueClaimRes,
  AnnotationQueueCreateReq,
  AnnotationQueueCreateRes,
  AnnotationQueueEventsReq,
  AnnotationQueueFinishedReq,
  AnnotationQueueFinishedRes,
  AnnotationQueueItemAnnotationsReq,
  AnnotationQueueItemAnnotationsRes,
  AnnotationQueueItemProgressReq,
  AnnotationQueueItemRef,
  AnnotationQueueItemRes,
  AnnotationQueueItemsAddReq,
  AnnotationQueueItemsAddRes,
  AnnotationQueueItemsAssignReq,
  AnnotationQueueItemsAssignRes,
  AnnotationQueueMineReq,
  AnnotationQueueMineRes,
  AnnotationQueueItemsQueryReq,
  AnnotationQueueItemsQueryRes,
  AnnotationQueueQueryReq,
  AnnotationQueueQueryRes,
  AnnotationQueueReadReq,
  AnnotationQueueRes,
  AnnotationQueueStatsReq,
  AnnotationQueueStatsRes,
  AnnotationQueueUpdateReq,
} from '@loupe/shared';
import { createQueue, deleteQueue, queryQueues, readQueue, updateQueue } from '../../domain/annotation-queues.ts';
import { queueAgreement } from '../../domain/agreement.ts';
import { claimItem } from '../../domain/claim.ts';
import { finishedItems } from '../../domain/finished-items.ts';
import { itemAnnotations } from '../../domain/item-annotations.ts';
import { resolvePaging } from '../../domain/paging.ts';
import { updateProgress } from '../../domain/progress.ts';
import { queueStats } from '../../domain/queue-stats.ts';
import { addItems, assignItems, deleteItem, queryItems } from '../../domain/queue-items.ts';
import { myQueues } from '../../domain/my-queues.ts';
import { isAnnotatorIn, type Access } from '../../domain/access.ts';
import { openEventStream, type StreamRequest } from '../../events/open-event-stream.ts';
import type { AuthUser } from '../../domain/auth-user.ts';
import type { Context } from '../context.ts';
import { protectedProcedure, router, streamUnderErrorPolicy } from '../trpc.ts';
import { projectProcedure, queueProcedure } from '../project-procedures.ts';
import { queueRulesRouter } from './queue-rules.ts';
import { rest } from '../rest-meta.ts';

const tags = ['annotation queues'];

/** The caller's id when they work the project as an annotator, whose answers are blind to others' work (5.11). */
const blindTo = (user: AuthUser, projectId: string) => (isAnnotatorIn(user, projectId) ? user.id : undefined);

const itemsRouter = router({
  add: projectProcedure('write', AnnotationQueueItemsAddReq)
    .meta(rest({ method: 'POST', path: '/annotation_queues/{queue_id}/items', tags, summary: 'Add calls to a queue', answers: [404] }))
    .output(AnnotationQueueItemsAddRes)
    .mutation(({ ctx, input }) =>
      addItems(ctx.db, { req: input, userId: ctx.user.id, maxCallIds: ctx.services.config.limits.callIdsPerAdd, events: ctx.services.queueEvents }),
    ),

  query: queueProcedure('read-blind', AnnotationQueueItemsQueryReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/{queue_id}/items/query',
        tags,
        summary: 'Query the items of a queue',
        description: "An annotator sees each item with their own state (annotation_state, annotator_user_id), and filters by it.",
        answers: [404],
      }),
    )
    .output(AnnotationQueueItemsQueryRes)
    .query(({ ctx, input }) => queryItems(ctx.db, { req: input, page: resolvePaging(input, ctx.pageLimits), blindTo: blindTo(ctx.user, input.project_id) })),

  assign: projectProcedure('write', AnnotationQueueItemsAssignReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/{queue_id}/items/assign',
        tags,
        summary: 'Assign items to one user, who alone may claim them (null: to nobody)',
        description: "The user must be an admin, member or annotator of the project's entity, and an assignee of an assigned queue.",
        answers: [404],
      }),
    )
    .output(AnnotationQueueItemsAssignRes)
    .mutation(({ ctx, input }) => assignItems(ctx.db, { req: input, maxItemIds: ctx.services.config.limits.callIdsPerAdd, events: ctx.services.queueEvents })),

  annotations: queueProcedure('read-blind', AnnotationQueueItemAnnotationsReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/{queue_id}/items/annotations',
        tags,
        summary: 'How many annotations items have, of how many they need',
        description: "Per item: its annotators who completed or skipped it, and its quota (annotations_required: the queue's annotations_per_item).",
        answers: [404],
      }),
    )
    .output(AnnotationQueueItemAnnotationsRes)
    .query(async ({ ctx, input }) => ({ items: await itemAnnotations(ctx.db, input) })),

  claim: projectProcedure('annotate', AnnotationQueueClaimReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/{queue_id}/items/claim',
        tags,
        summary: 'Take the next item to annotate, with a lease',
        description: 'Your own unexpired in-progress item, else the next item assigned to you, else the next item assigned to nobody. Only assignees claim from an assigned queue.',
        answers: [404],
      }),
    )
    .output(AnnotationQueueClaimRes)
    .mutation(async ({ ctx, input }) => ({
      item: await claimItem(ctx.db, {
        userId: ctx.user.id,
        blind: isAnnotatorIn(ctx.user, input.project_id),
        projectId: input.project_id,
        queueId: input.queue_id,
        events: ctx.services.queueEvents,
      }),
    })),

  /** The caller's own finished items, latest first (an addition beyond the contract: an annotator's "previous item"). */
  finished: queueProcedure('read-blind', AnnotationQueueFinishedReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/{queue_id}/items/finished',
        tags,
        summary: "The caller's own finished items of a queue, the latest finished first",
        description: "Items the caller completed or skipped, each with the caller's own state and when they finished it; paged by cursor (5.6).",
        answers: [404],
      }),
    )
    .output(AnnotationQueueFinishedRes)
    .query(({ ctx, input }) =>
      finishedItems(ctx.db, { userId: ctx.user.id, blind: isAnnotatorIn(ctx.user, input.project_id), req: input, page: resolvePaging(input, ctx.pageLimits) }),
    ),

  progress: projectProcedure('annotate', AnnotationQueueItemProgressReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/{queue_id}/items/{item_id}/progress',
        tags,
        summary: "Set the caller's annotation state of an item",
        description:
          'The user is the authenticated caller, never a body field. Returns the item with its shown state (an annotator: their own). Only assignees post progress in an assigned queue.',
        answers: [404],
      }),
    )
    .output(AnnotationQueueItemRes)
    .mutation(async ({ ctx, input }) => ({
      item: await updateProgress(ctx.db, { userId: ctx.user.id, blind: isAnnotatorIn(ctx.user, input.project_id), req: input, events: ctx.services.queueEvents }),
    })),

  delete: projectProcedure('write', AnnotationQueueItemRef)
    .meta(rest({ method: 'DELETE', path: '/annotation_queues/{queue_id}/items/{item_id}', tags, summary: 'Remove an item (soft delete)', answers: [404] }))
    .output(AnnotationQueueItemRes)
    .mutation(async ({ ctx, input }) => ({
      item: await deleteItem(ctx.db, { projectId: input.project_id, queueId: input.queue_id, itemId: input.item_id, events: ctx.services.queueEvents }),
    })),
});

export const annotationQueuesRouter = router({
  create: projectProcedure('write', AnnotationQueueCreateReq)
    .meta(rest({ method: 'POST', path: '/annotation_queues', tags, summary: 'Create a queue' }))
    .output(AnnotationQueueCreateRes)
    .mutation(({ ctx, input }) => createQueue(ctx.unitOfWork(), { req: input, userId: ctx.user.id, events: ctx.services.queueEvents })),

  query: projectProcedure('read-blind', AnnotationQueueQueryReq)
    .meta(rest({ method: 'POST', path: '/annotation_queues/query', tags, summary: 'List queues, newest first', description: 'An annotator lists the queues open to them.' }))
    .output(AnnotationQueueQueryRes)
    .query(async ({ ctx, input }) => ({
      queues: await queryQueues(ctx.db, { req: input, page: resolvePaging(input, ctx.pageLimits), openOnlyTo: blindTo(ctx.user, input.project_id) }),
    })),

  /** Declared before `/annotation_queues/{queue_id}`: the first declared REST match wins. */
  mine: protectedProcedure
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/mine',
        tags,
        summary: 'The queues the caller may claim from, with what is left for them',
        description: "Open queues of the projects of the caller's entities (where they may annotate) and assigned queues naming them.",
      }),
    )
    .input(AnnotationQueueMineReq)
    .output(AnnotationQueueMineRes)
    .query(async ({ ctx, input }) => ({ queues: await myQueues(ctx.db, { user: ctx.user, req: input, budget: ctx.services.config.limits.responseBytes }) })),

  stats: queueProcedure('read-blind', AnnotationQueueStatsReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/stats',
        tags,
        summary: 'Progress counts of queues',
        description: 'An annotator gets the counts and, of by_annotator and by_assignee, their own entries only.',
        answers: [404],
      }),
    )
    .output(AnnotationQueueStatsRes)
    .query(async ({ ctx, input }) => ({ stats: await queueStats(ctx.db, { projectId: input.project_id, queueIds: input.queue_ids, blindTo: blindTo(ctx.user, input.project_id) }) })),

  read: queueProcedure('read-blind', AnnotationQueueReadReq)
    .meta(rest({ method: 'GET', path: '/annotation_queues/{queue_id}', tags, summary: 'Read a queue', answers: [404] }))
    .output(AnnotationQueueRes)
    .query(async ({ ctx, input }) => ({ queue: await readQueue(ctx.db, input.project_id, input.queue_id) })),

  update: projectProcedure('write', AnnotationQueueUpdateReq)
    .meta(rest({ method: 'PUT', path: '/annotation_queues/{queue_id}', tags, summary: 'Change a queue (fields left out stay)', answers: [404] }))
    .output(AnnotationQueueRes)
    .mutation(async ({ ctx, input }) => ({ queue: await updateQueue(ctx.unitOfWork(), input, ctx.services.queueEvents) })),

  delete: projectProcedure('write', AnnotationQueueReadReq)
    .meta(rest({ method: 'DELETE', path: '/annotation_queues/{queue_id}', tags, summary: 'Delete a queue and its items (soft delete)', answers: [404] }))
    .output(AnnotationQueueRes)
    .mutation(async ({ ctx, input }) => ({ queue: await deleteQueue(ctx.db, { projectId: input.project_id, queueId: input.queue_id, events: ctx.services.queueEvents }) })),

  agreement: projectProcedure('read', AnnotationQueueAgreementReq)
    .meta(
      rest({
        method: 'POST',
        path: '/annotation_queues/{queue_id}/agreement',
        tags,
        summary: 'How far the annotators of a queue agree, per scorer spec',
        description: "Krippendorff's alpha, observed agreement, Cohen's kappa per pair of annotators and the items that disagree most. Viewers may read it.",
        answers: [404],
      }),
    )
    .output(AnnotationQueueAgreementRes)
    .query(async ({ ctx, input }) => ({ agreement: await queueAgreement(ctx.db, input, ctx.services.config.limits.agreementTimeoutMs) })),

  /**
   * Live events of one queue over server-sent events (typed door only, no REST route): what
   * changed and which item, never its data. Viewers may subscribe; streams per key and per process
   * are limited (429).
   */
  events: queueProcedure('read-blind', AnnotationQueueEventsReq).subscription(({ ctx, input, signal }) => eventStream(ctx, { req: input, access: 'read-blind' }, signal)),

  /**
   * The same events for every queue of a project on one stream (an addition beyond the contract),
   * with a queue's creation and deletion as `queue_updated`; one stream counts once in the limits.
   */
  projectEvents: projectProcedure('read', AnnotationProjectEventsReq).subscription(({ ctx, input, signal }) => eventStream(ctx, { req: input, access: 'read' }, signal)),

  items: itemsRouter,
  rules: queueRulesRouter,
});

/** Either kind of event stream: one way to open them, with the same checks, limits and renewal. */
async function eventStream(ctx: Context & { user: AuthUser }, { req, access }: { req: StreamRequest; access: Access }, signal: AbortSignal | undefined) {
  const { services } = ctx;
  return streamUnderErrorPolicy(
    await openEventStream(ctx.db, {
      keyId: ctx.user.keyId,
      access,
      req,
      bus: services.queueEvents,
      slots: services.eventStreams,
      signal,
      readyWaitMs: services.config.dbTimeouts.connectMs,
      maxLifeMs: services.config.eventStreams.maxLifeMs,
    }),
  );
}
