import type { AnnotationQueueEvent } from '@loupe/shared';

/** One subscriber of a queue's events in this process (an open event stream). */
export type QueueEventSubscriber = {
  push(event: AnnotationQueueEvent): void;
  /** Ends the subscriber's stream and tells its client to reconnect (the server is shutting down). */
  end(renewal: 'shutdown'): void;
};

/**
 * This process's subscribers, by queue id. Holds nothing but the open streams: events pass through
 * and are gone, so no answer ever depends on what a process remembers.
 */
export class LocalFanout {
  readonly #byQueue = new Map<string, Set<QueueEventSubscriber>>();
  #count = 0;

  /** Adds a subscriber; the function it returns removes it (once, however often it is called). */
  subscribe(queueId: string, subscriber: QueueEventSubscriber): () => void {
    let set = this.#byQueue.get(queueId);
    if (!set) this.#byQueue.set(queueId, (set = new Set()));
    set.add(subscriber);
    this.#count++;
    return () => {
      const current = this.#byQueue.get(queueId);
      if (!current?.delete(subscriber)) return;
      this.#count--;
      if (!current.size) this.#byQueue.delete(queueId);
    };
  }

  deliver(event: AnnotationQueueEvent): void {
    for (const subscriber of this.#byQueue.get(event.queue_id) ?? []) subscriber.push(event);
  }

  /**
   * Tells every subscriber that its queue may have changed unseen (events were lost while the
   * database connection that receives them was down): a `queue_updated` makes clients refetch.
   */
  deliverMissed(at: Date): void {
    for (const queueId of this.#byQueue.keys()) this.deliver({ type: 'queue_updated', queue_id: queueId, at: at.toISOString() });
  }

  endAll(): void {
    for (const set of this.#byQueue.values()) for (const subscriber of set) subscriber.end('shutdown');
  }

  /** Open subscriptions in this process. */
  get size(): number {
    return this.#count;
  }
}
