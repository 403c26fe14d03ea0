import { describe, expect, it } from 'vitest';
import { nextPollMs, POLL_DUE_MS, POLL_IDLE_MS, retriable, shownState, type Delivery } from '../../../clients/web/src/webhooks/delivery-states.ts';

// The webhooks page's reading of a delivery's state, and how soon it polls the list again.

const NOW = Date.parse('2026-11-26T12:00:00.000Z');
const at = (ms: number) => new Date(NOW + ms).toISOString();
const delivery = (fields: Partial<Delivery>): Delivery => ({
  id: 'd',
  event_id: 'e',
  type: 'webhook.test',
  state: 'pending',
  attempts: 0,
  last_status: null,
  last_error: null,
  next_attempt_at: at(0),
  created_at: at(-1_000),
  ...fields,
});

describe('webhook delivery states', () => {
  it('reads a pending delivery that failed before as retrying; offers a retry for failed and retrying ones only', () => {
    const cases = [
      [delivery({}), 'pending', false],
      [delivery({ attempts: 1, last_status: 500 }), 'retrying', true],
      [delivery({ state: 'failed', attempts: 8, next_attempt_at: null }), 'failed', true],
      [delivery({ state: 'delivered', attempts: 1, next_attempt_at: null }), 'delivered', false],
    ] as const;
    for (const [shown, state, retry] of cases) {
      expect(shownState(shown)).toBe(state);
      expect(retriable(shown)).toBe(retry);
    }
  });

  it('polls seldom with nothing pending, often while one is due, and just after the next attempt of one waiting', () => {
    expect(nextPollMs([], NOW)).toBe(POLL_IDLE_MS);
    expect(nextPollMs([delivery({ state: 'delivered' }), delivery({ state: 'failed' })], NOW)).toBe(POLL_IDLE_MS);
    // Due now, or overdue (an attempt under way): soon.
    expect(nextPollMs([delivery({ next_attempt_at: at(-60_000) })], NOW)).toBe(POLL_DUE_MS);
    expect(nextPollMs([delivery({ next_attempt_at: null })], NOW)).toBe(POLL_DUE_MS);
    // Waiting 5 s for a retry: just after it; the earliest of several counts.
    expect(nextPollMs([delivery({ attempts: 1, next_attempt_at: at(60_000) }), delivery({ attempts: 1, next_attempt_at: at(5_000) })], NOW)).toBe(5_000 + POLL_DUE_MS);
    // Waiting an hour: no later than the idle interval.
    expect(nextPollMs([delivery({ attempts: 1, next_attempt_at: at(3_600_000) })], NOW)).toBe(POLL_IDLE_MS);
  });
});
