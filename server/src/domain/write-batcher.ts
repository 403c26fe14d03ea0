/**
 * Runs `write` over items added while none runs, and then, once it ends, over all added
 * meanwhile: items that come together (attempts ending together, events of writes committing
 * together) go in one statement, and nothing waits on a timer. The first write starts after the
 * current turn's I/O, so the items of that turn join it. Each `add` settles with the write that
 * took its item.
 */
export class WriteBatcher<T> {
  readonly #write: (items: T[]) => Promise<void>;
  #waiting: { item: T; done: () => void; fail: (error: unknown) => void }[] = [];
  /** The writing under way, if any. */
  #draining: Promise<void> | undefined;

  constructor(write: (items: T[]) => Promise<void>) {
    this.#write = write;
  }

  add(item: T): Promise<void> {
    return new Promise((done, fail) => {
      this.#waiting.push({ item, done, fail });
      this.#draining ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#drain());
    });
  }

  /** Items added and not yet taken by a write. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Settles once every item added so far has been written (or its write failed). */
  async idle(): Promise<void> {
    await this.#draining;
  }

  async #drain(): Promise<void> {
    while (this.#waiting.length) {
      const taken = this.#waiting;
      this.#waiting = [];
      try {
        await this.#write(taken.map((entry) => entry.item));
        for (const entry of taken) entry.done();
      } catch (error) {
        for (const entry of taken) entry.fail(error);
      }
    }
    this.#draining = undefined;
  }
}
