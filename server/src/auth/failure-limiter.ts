/**
 * Counts failed authentications per client over a sliding minute. In memory by design: it is a
 * brake on guessing, not a correctness property, so each server process keeps its own.
 */
export class AuthFailureLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #failures = new Map<string, number[]>();

  constructor(limit: number, windowMs = 60_000) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** True while no failure is counted against any client (the usual case: nothing to check). */
  get quiet(): boolean {
    return this.#failures.size === 0;
  }

  /** Seconds until this client may try again, or 0 when it is not blocked. */
  retryAfterSeconds(client: string, now = Date.now()): number {
    const recent = this.#recent(client, now);
    if (recent.length < this.#limit) return 0;
    const oldestCounted = recent[recent.length - this.#limit]!;
    return Math.max(1, Math.ceil((oldestCounted + this.#windowMs - now) / 1000));
  }

  recordFailure(client: string, now = Date.now()): void {
    const recent = this.#recent(client, now);
    recent.push(now);
    this.#failures.set(client, recent);
    if (this.#failures.size > 10_000) this.#sweep(now);
  }

  #recent(client: string, now: number): number[] {
    const times = this.#failures.get(client);
    if (!times) return [];
    const cutoff = now - this.#windowMs;
    const kept = times.filter((t) => t > cutoff);
    if (kept.length) this.#failures.set(client, kept);
    else this.#failures.delete(client);
    return kept;
  }

  #sweep(now: number): void {
    for (const client of [...this.#failures.keys()]) this.#recent(client, now);
  }
}
