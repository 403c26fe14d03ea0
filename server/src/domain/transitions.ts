import type { ProgressState } from '@loupe/shared';

export type TransitionDecision = { action: 'insert' | 'update' | 'none' } | { action: 'reject'; reason: string };

/**
 * The progress transition table of the contract (section 4.1), per annotator:
 * none → any; in_progress → completed | skipped; the same state again → nothing written;
 * completed or skipped → anything else is refused.
 */
export function decideTransition(current: ProgressState | null, requested: ProgressState): TransitionDecision {
  if (current === null) return { action: 'insert' };
  if (current === requested) return { action: 'none' };
  if (current === 'in_progress') return { action: 'update' };
  return { action: 'reject', reason: `invalid state transition from ${current} to ${requested}` };
}
