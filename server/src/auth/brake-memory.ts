import { LRUCache } from 'lru-cache';
import type { FailureCounts } from './failure-counts.ts';

type Window = { failures: number; endsAt: number };

/** Clients remembered at most: about 2 MB of heap when full (measured with IPv6 addresses as keys). */
export const MAX_CLIENTS = 10_000;

/**
 * Failure counts in this process's memory, for SQLite (one process). A fixed-size LRU whose
 * entries expire with their window: a flood of new addresses evicts the least recently failing
 * clients instead of growing the process.
 */
export class MemoryFailureCounts implements FailureCounts {
  readonly #windowMs: number;
  readonly #windows: LRUCache<string, Window>;
  readonly #now: () => number;

  constructor({ windowMs, maxClients = MAX_CLIENTS, now = () => performance.now() }: { windowMs: number; maxClients?: number; now?: () => number }) {
    this.#windowMs = windowMs;
    this.#now = now;
    // The cache's clock is ours, so that a window's end and the entry's expiry agree.
    this.#windows = new LRUCache<string, Window>({ max: maxClients, ttl: windowMs, perf: { now } });
  }

  async add(client: string): Promise<{ failures: number; secondsLeft: number }> {
    const now = this.#now();
    let window = this.#windows.get(client);
    // Decided here rather than by the cache's expiry, which may lag its clock by a millisecond.
    if (!window || window.endsAt <= now) {
      window = { failures: 0, endsAt: now + this.#windowMs };
      this.#windows.set(client, window);
    }
    // Counted in place: a set() would restart the entry's time to live with every failure.
    window.failures += 1;
    return { failures: window.failures, secondsLeft: Math.ceil((window.endsAt - now) / 1000) };
  }

  async current(client: string): Promise<number> {
    const window = this.#windows.peek(client);
    return window && window.endsAt > this.#now() ? window.failures : 0;
  }

  /** How many clients are remembered. */
  get size(): number {
    return this.#windows.size;
  }
}
