import { useEffect, useState } from 'react';

/** Refetches of what one queue shows are at most this often. */
export const REFETCH_INTERVAL_MS = 500;

/**
 * Runs work at most once per interval for each key, leading and trailing: the first call runs at
 * once, the calls during the interval after it run once when it ends (the latest of them), and so
 * on until a quiet interval. A burst of events (annotators finishing items, a large add) then costs
 * one refetch at its start and one at its end, while a single event is shown at once.
 */
export class PacedRuns {
  readonly #intervalMs: number;
  readonly #slots = new Map<string, { timer: ReturnType<typeof setTimeout>; due: (() => void) | undefined }>();

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  run(key: string, work: () => void): void {
    const slot = this.#slots.get(key);
    if (slot) {
      slot.due = work;
      return;
    }
    work();
    const tick = () => {
      const current = this.#slots.get(key);
      if (!current) return;
      const due = current.due;
      if (!due) {
        this.#slots.delete(key);
        return;
      }
      current.due = undefined;
      due();
      current.timer = setTimeout(tick, this.#intervalMs);
    };
    this.#slots.set(key, { timer: setTimeout(tick, this.#intervalMs), due: undefined });
  }

  /** Drops what is due and stops the timers (the page went away). */
  cancel(): void {
    for (const { timer } of this.#slots.values()) clearTimeout(timer);
    this.#slots.clear();
  }
}

/** Paced runs (REFETCH_INTERVAL_MS per key) for as long as the component is shown. */
export function usePacedRuns(): PacedRuns {
  const [paced] = useState(() => new PacedRuns(REFETCH_INTERVAL_MS));
  useEffect(() => () => paced.cancel(), [paced]);
  return paced;
}
