type Waiter = { hold: HeapHold; units: number; resolve: (taken: boolean) => void; timer: NodeJS.Timeout };
type Account = { held: number; holders: Set<HeapHold> };

let holdsMade = 0;

/** The budget's unit: 64 KiB of heap weight; a small body or answer holds one. */
export const HEAP_UNIT = 64 * 1024;

/** A budget of `bytes` of heap weight, of which one account holds `shareBytes` (see HeapBudget). */
export function heapBudgetOf(bytes: number, shareBytes: number): HeapBudget {
  return new HeapBudget(Math.max(1, Math.floor(bytes / HEAP_UNIT)), Math.max(1, Math.floor(shareBytes / HEAP_UNIT)));
}

/** The units a weight in bytes takes (at least one). */
export function heapUnits(weight: number): number {
  return Math.max(1, Math.ceil(weight / HEAP_UNIT));
}

/**
 * A count of units of heap shared by the request bodies in flight and the answers being made,
 * handed out first come, first served (http/body.ts takes it for bodies, api/context.ts for
 * answers). Each takes its units through a `HeapHold`, which also charges them to its accounts
 * (its API key, its client address): an account's bodies hold at most `share` units together,
 * except that its oldest body may grow past that up to `largest` (the size less one share), so
 * that no one key or address can take the whole budget, while one body of any admissible weight
 * still passes, and bodies of one client sent side by side cannot stall each other: the oldest
 * goes on. Taking units when there is room and nobody waits is synchronous: this runs for every
 * chunk of every body (async-mutex's weighted semaphore was tried first: it makes a promise and a
 * timer for every acquisition and walks every free unit on every release).
 */
export class HeapBudget {
  readonly size: number;
  readonly share: number;
  /** The most one account may hold, and so one body's most. */
  readonly largest: number;
  #free: number;
  readonly #waiters: Waiter[] = [];
  /** Units held per account, and by which bodies (only accounts that hold some). */
  readonly #accounts = new Map<string, Account>();

  constructor(size: number, share = size) {
    this.size = size;
    this.share = Math.min(share, size);
    this.largest = share < size ? size - share : size;
    this.#free = size;
  }

  /** A holder of units for one body, charged to `accounts` (e.g. its key and its address). */
  hold(accounts: readonly string[] = []): HeapHold {
    return new HeapHold(this, accounts);
  }

  get free(): number {
    return this.#free;
  }

  /** Units an account holds now. */
  heldBy(account: string): number {
    return this.#accounts.get(account)?.held ?? 0;
  }

  /** @internal (HeapHold) */
  take(hold: HeapHold, units: number, { waitMs, ahead }: { waitMs: number; ahead: boolean }): boolean | Promise<boolean> {
    if (units <= 0) return true;
    if (hold.held + units > this.largest) return false;
    const admitted = this.#accountsAdmit(hold, units);
    if (units <= this.#free && admitted && (ahead || !this.#lineBlocked())) {
      this.#grant(hold, units);
      return true;
    }
    // Past its share, a client may have one body (or answer) waiting, not a queue of them: each
    // waits with its bytes half read, and the heap its earlier ones left is still being reclaimed.
    if (!admitted && this.#waiters.some((waiter) => waiter.hold !== hold && sharesAccount(waiter.hold, hold) && !this.#accountsAdmit(waiter.hold, waiter.units))) {
      return false;
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        hold,
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

  /** @internal (HeapHold) */
  give(hold: HeapHold, units: number): void {
    if (units <= 0) return;
    hold.held -= units;
    this.#free += units;
    for (const name of hold.accounts) {
      const account = this.#accounts.get(name);
      if (!account) continue;
      account.held -= units;
      if (hold.held === 0) account.holders.delete(hold);
      if (account.holders.size === 0) this.#accounts.delete(name);
    }
    this.#dispatch();
  }

  #grant(hold: HeapHold, units: number): void {
    this.#free -= units;
    hold.held += units;
    for (const name of hold.accounts) {
      const account = this.#accounts.get(name) ?? { held: 0, holders: new Set() };
      account.held += units;
      account.holders.add(hold);
      this.#accounts.set(name, account);
    }
  }

  /** Within every account's share, or within `largest` for the oldest body holding units of that account. */
  #accountsAdmit(hold: HeapHold, units: number): boolean {
    return hold.accounts.every((name) => {
      const account = this.#accounts.get(name);
      if (!account || account.held + units <= this.share) return true;
      if (account.held + units > this.largest) return false;
      for (const other of account.holders) if (other.order < hold.order) return false;
      return true;
    });
  }

  /** Whether a waiter that its accounts admit waits for free units: newcomers queue behind it. */
  #lineBlocked(): boolean {
    return this.#waiters.some((waiter) => this.#accountsAdmit(waiter.hold, waiter.units));
  }

  /**
   * Grants waiters in order. One that its accounts hold back is passed over (a key at its share
   * must not stall everyone else); one that waits for free units stops the line, so that a large
   * body is not starved by a stream of small ones.
   */
  #dispatch(): void {
    for (let i = 0; i < this.#waiters.length; ) {
      const waiter = this.#waiters[i]!;
      if (!this.#accountsAdmit(waiter.hold, waiter.units)) {
        i++;
        continue;
      }
      if (waiter.units > this.#free) return;
      this.#waiters.splice(i, 1);
      clearTimeout(waiter.timer);
      this.#grant(waiter.hold, waiter.units);
      waiter.resolve(true);
    }
  }
}

function sharesAccount(a: HeapHold, b: HeapHold): boolean {
  return a.accounts.some((name) => b.accounts.includes(name));
}

/** The units one body holds; `release` gives them all back (once the body is no longer in the heap's way). */
export class HeapHold {
  held = 0;
  /** Bodies made earlier have lower numbers: the oldest of an account may pass its share. */
  readonly order = ++holdsMade;
  #released = false;
  readonly #budget: HeapBudget;
  readonly accounts: readonly string[];

  constructor(budget: HeapBudget, accounts: readonly string[]) {
    this.#budget = budget;
    this.accounts = [...new Set(accounts)];
  }

  /**
   * Takes `units` more now (true), or waits up to `waitMs` for them (a promise of whether they
   * were taken). `ahead` puts the wait before the others: for a body that already holds units and
   * wants a few more, so that it cannot wait behind bodies waiting for what it holds. Units granted
   * after the hold was released go straight back.
   */
  take(units: number, waitMs: number, ahead = false): boolean | Promise<boolean> {
    if (this.#released) return false;
    const taken = this.#budget.take(this, units, { waitMs, ahead });
    if (typeof taken === 'boolean') return taken;
    return taken.then((ok) => {
      if (ok && this.#released) this.#budget.give(this, units);
      return ok && !this.#released;
    });
  }

  /** Holds at least `units` in all, taking the difference. */
  growTo(units: number, waitMs: number): boolean | Promise<boolean> {
    return units > this.held ? this.take(units - this.held, waitMs, this.held > 0) : true;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#budget.give(this, this.held);
  }
}
