import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PacedRuns } from '../../../clients/web/src/live/paced-runs.ts';

describe('PacedRuns', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('runs the first call of a key at once, the latest of a burst once at the end of each interval, and keys apart', () => {
    const paced = new PacedRuns(500);
    const ran: string[] = [];
    paced.run('a', () => ran.push('a1'));
    paced.run('b', () => ran.push('b1'));
    paced.run('a', () => ran.push('a2'));
    paced.run('a', () => ran.push('a3'));
    expect(ran).toEqual(['a1', 'b1']);
    vi.advanceTimersByTime(500);
    expect(ran).toEqual(['a1', 'b1', 'a3']);
    // A quiet interval ends the burst: the next call runs at once again.
    vi.advanceTimersByTime(500);
    paced.run('a', () => ran.push('a4'));
    expect(ran.at(-1)).toBe('a4');
    paced.run('a', () => ran.push('a5'));
    paced.cancel();
    vi.advanceTimersByTime(1_000);
    expect(ran.at(-1)).toBe('a4');
  });
});
