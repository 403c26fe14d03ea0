import type { LoupeClient } from '@loupe/client';
import type { QueueItem } from './annotate-queries.ts';

/** How many finished items one read brings. */
const PAGE = 50;

/**
 * The items an annotator completed in a queue, latest completed first, read a page at a time as
 * "previous" walks back through them (the server's items/finished, which holds them across
 * sessions). Made again when the annotator completes another item, which becomes the latest.
 */
export class FinishedWalk {
  readonly #items: QueueItem[] = [];
  #cursor: string | null = null;
  #done = false;

  readonly #client: LoupeClient;
  readonly #projectId: string;
  readonly #queueId: string;

  constructor(client: LoupeClient, projectId: string, queueId: string) {
    this.#client = client;
    this.#projectId = projectId;
    this.#queueId = queueId;
  }

  /** The item completed before the one with this id (the latest when null, or when that one is not among them); null when there is none. */
  async olderThan(itemId: string | null): Promise<QueueItem | null> {
    const at = () => (itemId === null ? -1 : this.#items.findIndex((item) => item.id === itemId));
    while ((itemId !== null && at() === -1) || at() + 1 >= this.#items.length) {
      if (this.#done) break;
      await this.#read();
    }
    return this.#items[at() + 1] ?? null;
  }

  async #read(): Promise<void> {
    const page = await this.#client.annotationQueues.items.finished.query({
      project_id: this.#projectId,
      queue_id: this.#queueId,
      annotation_states: ['completed'],
      limit: PAGE,
      ...(this.#cursor ? { cursor: this.#cursor } : {}),
    });
    const known = new Set(this.#items.map((item) => item.id));
    this.#items.push(...page.finished.map(({ item }) => item).filter((item) => !known.has(item.id)));
    this.#cursor = page.next_cursor;
    this.#done = page.next_cursor === null;
  }
}
