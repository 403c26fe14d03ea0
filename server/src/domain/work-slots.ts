/**
 * At most `size` pieces of work at once; the others wait in line, in order of arrival. A slot
 * that frees passes straight to the next in line. Bounds what a kind of costly work (a password
 * hash, an agreement) may take of the process whoever asks for it.
 */
export class WorkSlots {
  readonly #size: number;
  readonly #maxWaiting: number;
  #busy = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number, { maxWaiting = Infinity }: { maxWaiting?: number } = {}) {
    this.#size = size;
    this.#maxWaiting = maxWaiting;
  }

  /**
   * Runs `work` in a slot. `refuse` makes the error thrown instead: at once when `maxWaiting` are
   * in line already, or when no slot came free within `waitMs`.
   */
  async run<T>(work: () => Promise<T>, { refuse, waitMs }: { refuse: () => Error; waitMs?: number }): Promise<T> {
    if (this.#busy >= this.#size) {
      if (this.#waiting.length >= this.#maxWaiting) throw refuse();
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = waitMs === undefined ? undefined : setTimeout(() => {
          this.#waiting.splice(this.#waiting.indexOf(turn), 1);
          reject(refuse());
        }, Math.max(0, waitMs));
        this.#waiting.push(turn);
      });
    } else {
      this.#busy++;
    }
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#busy--;
    }
  }
}
