type Waiter = { units: number; resolve: (taken: boolean) => void; timer: NodeJS.Timeout };

/**
 * A count of units shared by the request bodies in flight, handed out first come, first served.
 * Taking units when there is room and nobody waits is synchronous: this runs for every request
 * with a body (async-mutex's weighted semaphore was tried first: it makes a promise and a timer
 * for every acquisition and walks every free unit on every release).
 */
export class BodyBudget {
  readonly size: number;
  #free: number;
  readonly #waiters: Waiter[] = [];

  constructor(size: number) {
    this.size = size;
    this.#free = size;
  }

  /**
   * Takes `units` now (true), or waits up to `waitMs` for them (a promise of whether they were
   * taken). `ahead` puts the wait before the others: for a request that already holds units and
   * wants a few more, so that it cannot wait behind requests waiting for what it holds.
   */
  take(units: number, waitMs: number, ahead = false): boolean | Promise<boolean> {
    if (units <= this.#free && (ahead || this.#waiters.length === 0)) {
      this.#free -= units;
      return true;
    }
    if (units > this.size) return false;
    return new Promise((resolve) => {
      const waiter: Waiter = {
        units,
        resolve,
        timer: setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          resolve(false);
          this.#dispatch(); // a large waiter at the head may have held smaller ones back
        }, waitMs),
      };
      if (ahead) this.#waiters.unshift(waiter);
      else this.#waiters.push(waiter);
    });
  }

  give(units: number): void {
    this.#free += units;
    this.#dispatch();
  }

  #dispatch(): void {
    while (this.#waiters.length > 0 && this.#waiters[0]!.units <= this.#free) {
      const waiter = this.#waiters.shift()!;
      clearTimeout(waiter.timer);
      this.#free -= waiter.units;
      waiter.resolve(true);
    }
  }
}
