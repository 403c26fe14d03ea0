import type { LoupeClient, RouterInputs, RouterOutputs } from '@loupe/client';
import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';

// What the webhooks page reads (contract 5.13). Keys sit under ['session', <id>] like every
// signed-in query, so signing out drops them.

export type Webhook = RouterOutputs['webhooks']['query']['webhooks'][number];
export type WebhookFields = Omit<RouterInputs['webhooks']['create'], 'project_id'>;
export type Delivery = RouterOutputs['webhooks']['deliveries']['query']['deliveries'][number];

/** Deliveries per page of a webhook's list (newest first). */
export const DELIVERIES_PAGE_SIZE = 20;

/**
 * Deliveries are not announced on the app's live event stream (it carries queue events only), so
 * the page polls: often while a delivery is due, at its next attempt while one waits for a retry,
 * and seldom otherwise, to show deliveries that others' work caused.
 */
export const POLL_DUE_MS = 1_500;
export const POLL_IDLE_MS = 30_000;

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

/** How long until the deliveries are read again: soon after the earliest pending one's next attempt. */
export function nextPollMs(deliveries: readonly Delivery[], now: number): number {
  const due = deliveries.filter((delivery) => delivery.state === 'pending').map((delivery) => (delivery.next_attempt_at ? Date.parse(delivery.next_attempt_at) - now : 0));
  if (!due.length) return POLL_IDLE_MS;
  return Math.min(POLL_IDLE_MS, Math.max(POLL_DUE_MS, Math.min(...due) + POLL_DUE_MS));
}

/** A delivery's state as a person reads it: a pending delivery that failed before is retrying. */
export type DeliveryShownState = 'pending' | 'retrying' | 'delivered' | 'failed';

export const DELIVERY_STATE_LABELS: Record<DeliveryShownState, string> = {
  pending: 'Pending',
  retrying: 'Retrying',
  delivered: 'Delivered',
  failed: 'Failed',
};

export function shownState(delivery: Delivery): DeliveryShownState {
  return delivery.state === 'pending' && delivery.attempts > 0 ? 'retrying' : delivery.state;
}

/** Whether a person may send a delivery again now: one that failed or waits for its next try. */
export function retriable(delivery: Delivery): boolean {
  const state = shownState(delivery);
  return state === 'failed' || state === 'retrying';
}
