import type { QueueBusEvent } from '../domain/queue-events.ts';
import type { EventTopic, QueueEventSubscriber } from './queue-event-bus.ts';

/**
 * This process's subscribers, by queue id and by project id. Holds nothing but the open streams:
 * events pass through and are gone, so no answer ever depends on what a process remembers. Each
 * event reaches the subscribers of its queue and those of its project.
 */
export class LocalFanout {
  readonly #byQueue = new Map<string, Set<QueueEventSubscriber>>();
  readonly #byProject = new Map<string, Set<QueueEventSubscriber>>();
  #count = 0;

  /** Adds a subscriber; the function it returns removes it (once, however often it is called). */
  subscribe(topic: EventTopic, subscriber: QueueEventSubscriber): () => void {
    const [map, id] = 'queue_id' in topic ? [this.#byQueue, topic.queue_id] : [this.#byProject, topic.project_id];
    let set = map.get(id);
    if (!set) map.set(id, (set = new Set()));
    set.add(subscriber);
    this.#count++;
    return () => {
      const current = map.get(id);
      if (!current?.delete(subscriber)) return;
      this.#count--;
      if (!current.size) map.delete(id);
    };
  }

  deliver({ project_id: projectId, ...event }: QueueBusEvent): void {
    for (const subscriber of this.#byQueue.get(event.queue_id) ?? []) subscriber.push(event);
    for (const subscriber of this.#byProject.get(projectId) ?? []) subscriber.push(event);
  }

  /**
   * Tells every subscriber that what it shows may have changed unseen (events were lost while the
   * database connection that receives them was down). A queue's subscribers get a `queue_updated`,
   * which makes clients refetch; a project's are renewed, since which of its queues changed is
   * unknown here, and a client refetches everything when it reconnects.
   */
  deliverMissed(at: Date): void {
    for (const [queueId, set] of this.#byQueue) for (const subscriber of set) subscriber.push({ type: 'queue_updated', queue_id: queueId, at: at.toISOString() });
    for (const set of this.#byProject.values()) for (const subscriber of [...set]) subscriber.end('missed');
  }

  endAll(): void {
    for (const map of [this.#byQueue, this.#byProject]) for (const set of map.values()) for (const subscriber of [...set]) subscriber.end('shutdown');
  }

  /** Open subscriptions in this process. */
  get size(): number {
    return this.#count;
  }
}
