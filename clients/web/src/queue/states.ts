import type { ItemState } from './queue-queries.ts';

/** The annotation states in the order work moves through them, with their words for people. */
export const STATE_LABELS: Record<ItemState, string> = {
  unstarted: 'Not started',
  in_progress: 'In progress',
  completed: 'Completed',
  skipped: 'Skipped',
};
export const STATES = Object.keys(STATE_LABELS) as ItemState[];
