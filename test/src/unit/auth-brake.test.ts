import { AuthBrake, createLogger, MemoryFailureCounts, type FailureCounts } from '@loupe/server';
import { describe, expect, it, vi } from 'vitest';

const WINDOW_MS = 60_000;

function clock(start = 1_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('in-memory failure counts (SQLite)', () => {
  it('keeps at most maxClients clients, forgetting the least recently failing', async () => {
    const counts = new MemoryFailureCounts({ windowMs: WINDOW_MS, maxClients: 3 });
    await counts.add('a');
    await counts.add('a');
    for (const client of ['b', 'c', 'd', 'e']) await counts.add(client);
    expect(counts.size).toBe(3);
    expect(await counts.current('a')).toBe(0);
    expect(await counts.current('b')).toBe(0);
    expect([await counts.current('c'), await counts.current('d'), await counts.current('e')]).toEqual([1, 1, 1]);
    for (let i = 0; i < 1000; i++) await counts.add(`10.0.${i >> 8}.${i & 255}`);
    expect(counts.size).toBe(3);
  });

  it('counts in a window that opens with the first failure and restarts once it has ended', async () => {
    const time = clock();
    const counts = new MemoryFailureCounts({ windowMs: WINDOW_MS, now: time.now });
    expect(await counts.add('a')).toEqual({ failures: 1, secondsLeft: 60 });
    time.advance(45_500);
    expect(await counts.add('a')).toEqual({ failures: 2, secondsLeft: 15 });
    time.advance(14_500);
    expect(await counts.current('a')).toBe(0);
    expect(await counts.add('a')).toEqual({ failures: 1, secondsLeft: 60 });
    expect(counts.size).toBe(1);
  });
});

describe('AuthBrake', () => {
  const log = createLogger('silent');

  it('answers 0 (401) up to the limit, then the seconds left in the window (429)', async () => {
    const time = clock();
    const brake = new AuthBrake(new MemoryFailureCounts({ windowMs: WINDOW_MS, now: time.now }), 2, log);
    expect(await brake.recordFailure('a')).toBe(0);
    time.advance(10_000);
    expect(await brake.recordFailure('a')).toBe(0);
    expect(await brake.recordFailure('a')).toBe(50);
    expect(await brake.recordFailure('b')).toBe(0);
    time.advance(50_000);
    expect(await brake.recordFailure('a')).toBe(0);
    expect(await brake.current('a')).toBe(1);
  });

  it('opens (answers 0) and logs a warning when the count cannot be kept', async () => {
    const failing: FailureCounts = {
      add: () => Promise.reject(new Error('database unreachable')),
      current: () => Promise.reject(new Error('database unreachable')),
    };
    const warn = vi.spyOn(log, 'warn');
    const brake = new AuthBrake(failing, 0, log);
    expect(await brake.recordFailure('a')).toBe(0);
    expect(warn).toHaveBeenCalledWith(expect.objectContaining({ err: expect.any(Error) }), expect.stringMatching(/brake/));
  });
});
