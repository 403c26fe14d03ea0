import {
  WebhookCreateReq,
  WebhookCreateRes,
  WebhookDeliveriesQueryReq,
  WebhookDeliveriesQueryRes,
  WebhookDeliveryRes,
  WebhookDeliveryRetryReq,
  WebhookQueryReq,
  WebhookQueryRes,
  WebhookRef,
  WebhookRes,
  WebhookRotateSecretRes,
  WebhookTestRes,
  WebhookUpdateReq,
} from '@loupe/shared';
import { resolvePaging } from '../../domain/paging.ts';
import { queryDeliveries, retryDelivery, testWebhook } from '../../domain/webhook-deliveries.ts';
import { createWebhook, deleteWebhook, queryWebhooks, rotateWebhookSecret, updateWebhook, type WebhookTargetPolicy } from '../../domain/webhooks.ts';
import type { Context } from '../context.ts';
import { projectProcedure } from '../project-procedures.ts';
import { rest } from '../rest-meta.ts';
import { router } from '../trpc.ts';

const tags = ['webhooks'];

// Webhooks are managed by members and admins; viewers do not see them either, since a url may
// carry a receiver's credentials (its path or query).

/** What a webhook's url is checked against (the settings and the resolver). */
function targetPolicy(ctx: Context): WebhookTargetPolicy {
  const { allowHttp, allowPrivate } = ctx.services.config.webhooks;
  return { allowHttp, allowPrivate, resolve: ctx.services.webhooks.resolve };
}

export const webhooksRouter = router({
  create: projectProcedure('write', WebhookCreateReq)
    .meta(
      rest({
        method: 'POST',
        path: '/webhooks',
        tags,
        summary: 'Create a webhook; its signing secret is shown once',
        description: 'Events are delivered by the Standard Webhooks specification, signed with the secret.',
      }),
    )
    .output(WebhookCreateRes)
    .mutation(({ ctx, input }) => createWebhook(ctx.db, { req: input, userId: ctx.user.id, box: ctx.services.webhooks.box, policy: targetPolicy(ctx) })),

  query: projectProcedure('write', WebhookQueryReq)
    .meta(rest({ method: 'POST', path: '/webhooks/query', tags, summary: "List a project's webhooks (never their secrets)" }))
    .output(WebhookQueryRes)
    .query(async ({ ctx, input }) => ({ webhooks: await queryWebhooks(ctx.db, input.project_id) })),

  update: projectProcedure('write', WebhookUpdateReq)
    .meta(rest({ method: 'PUT', path: '/webhooks/{id}', tags, summary: 'Change a webhook (fields left out stay)', answers: [404] }))
    .output(WebhookRes)
    .mutation(async ({ ctx, input }) => ({ webhook: await updateWebhook(ctx.db, { req: input, policy: targetPolicy(ctx) }) })),

  delete: projectProcedure('write', WebhookRef)
    .meta(rest({ method: 'DELETE', path: '/webhooks/{id}', tags, summary: 'Delete a webhook', answers: [404] }))
    .output(WebhookRes)
    .mutation(async ({ ctx, input }) => ({ webhook: await deleteWebhook(ctx.db, input) })),

  rotateSecret: projectProcedure('write', WebhookRef)
    .meta(
      rest({
        method: 'POST',
        path: '/webhooks/{id}/rotate-secret',
        tags,
        summary: 'A new signing secret; the old one keeps signing for 24 hours',
        description: 'Meanwhile every delivery carries two signatures, one per secret.',
        answers: [404],
      }),
    )
    .output(WebhookRotateSecretRes)
    .mutation(({ ctx, input }) => rotateWebhookSecret(ctx.db, { ref: input, box: ctx.services.webhooks.box })),

  test: projectProcedure('write', WebhookRef)
    .meta(rest({ method: 'POST', path: '/webhooks/{id}/test', tags, summary: 'Send a webhook.test event now', answers: [404] }))
    .output(WebhookTestRes)
    .mutation(async ({ ctx, input }) => ({ delivery: await testWebhook(ctx.db, { ref: input, wake: ctx.services.queueEvents }) })),

  deliveries: router({
    query: projectProcedure('write', WebhookDeliveriesQueryReq)
      .meta(rest({ method: 'POST', path: '/webhooks/{id}/deliveries/query', tags, summary: "A webhook's deliveries, newest first (paged by cursor)", answers: [404] }))
      .output(WebhookDeliveriesQueryRes)
      .query(({ ctx, input }) => queryDeliveries(ctx.db, { req: input, page: resolvePaging(input, ctx.pageLimits) })),

    retry: projectProcedure('write', WebhookDeliveryRetryReq)
      .meta(rest({ method: 'POST', path: '/webhooks/{id}/deliveries/{delivery_id}/retry', tags, summary: 'Send a delivery again now', answers: [404, 409] }))
      .output(WebhookDeliveryRes)
      .mutation(async ({ ctx, input }) => ({ delivery: await retryDelivery(ctx.db, { req: input, wake: ctx.services.queueEvents }) })),
  }),
});
