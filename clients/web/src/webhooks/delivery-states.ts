import type { RouterOutputs } from '@loupe/client';

// A delivery's state as the page shows it, and when the page reads the deliveries again.

export type Delivery = RouterOutputs['webhooks']['deliveries']['query']['deliveries'][number];

/**
 * Deliveries are not announced on the app's live event stream (it carries queue events only), so
 * the page polls: often while a delivery is due, at its next attempt while one waits for a retry,
 * and seldom otherwise, to show deliveries that others' work caused.
 */
export const POLL_DUE_MS = 1_500;
export const POLL_IDLE_MS = 30_000;

/** How long until the deliveries are read again: just after the earliest pending one's next attempt, within POLL_DUE_MS..POLL_IDLE_MS. */
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
