import type { LoupeClient, RouterInputs, RouterOutputs } from '@loupe/client';
import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { nextPollMs, POLL_IDLE_MS } from './delivery-states.ts';

// What the webhooks page reads (contract 5.13). Keys sit under ['session', <id>] like every
// signed-in query, so signing out drops them.

export type Webhook = RouterOutputs['webhooks']['query']['webhooks'][number];
export type WebhookFields = Omit<RouterInputs['webhooks']['create'], 'project_id'>;
export type { Delivery } from './delivery-states.ts';

/** Deliveries per page of a webhook's list (newest first). */
export const DELIVERIES_PAGE_SIZE = 20;

export const webhooksKey = (session: number, projectId: string) => ['session', session, 'webhooks', projectId] as const;

export const webhooksQuery = (client: LoupeClient, session: number, projectId: string) =>
  queryOptions({
    queryKey: webhooksKey(session, projectId),
    queryFn: async () => (await client.webhooks.query.query({ project_id: projectId })).webhooks,
    refetchInterval: POLL_IDLE_MS,
  });

export const deliveriesKey = (session: number, projectId: string, webhookId: string) => ['session', session, 'webhook-deliveries', projectId, webhookId] as const;

export const deliveriesQuery = (client: LoupeClient, session: number, projectId: string, webhookId: string) =>
  infiniteQueryOptions({
    queryKey: deliveriesKey(session, projectId, webhookId),
    queryFn: ({ pageParam }) =>
      client.webhooks.deliveries.query.query({ id: webhookId, project_id: projectId, limit: DELIVERIES_PAGE_SIZE, ...(pageParam ? { cursor: pageParam } : {}) }),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.next_cursor,
    refetchInterval: (query) => nextPollMs(query.state.data?.pages.flatMap((page) => page.deliveries) ?? [], Date.now()),
  });
