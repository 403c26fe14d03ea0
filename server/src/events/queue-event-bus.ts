import type { AnnotationQueueEvent } from '@loupe/shared';
import type { SqlScope } from '../db/sql.ts';
import type { QueueEventSubscriber } from './local-fanout.ts';

/**
 * What a write does with the events it causes: `publish` inside its transaction, `committed` once
 * the transaction has committed. Only one of them does anything, depending on the database:
 * PostgreSQL sends a NOTIFY in the transaction (the database delivers it to every server process
 * if and only if the transaction commits); SQLite, which only one process can serve, hands the
 * events to this process's subscribers after the commit.
 */
export type QueueEventPublisher = {
  publish(tx: SqlScope, events: readonly AnnotationQueueEvent[]): Promise<void>;
  committed(events: readonly AnnotationQueueEvent[]): void;
};

/** The events of queues, for writers (publisher) and for the open event streams of this process. */
export type QueueEventBus = QueueEventPublisher & {
  subscribe(queueId: string, subscriber: QueueEventSubscriber): () => void;
  /** Resolves once events written from now on will reach subscribers (PostgreSQL: LISTEN is in place). */
  ready(): Promise<void>;
  /** Open subscriptions in this process. */
  readonly subscriberCount: number;
  /** Ends every open stream (shutdown begins). */
  endStreams(): void;
  /** Releases what the bus holds (the LISTEN connection). */
  close(): Promise<void>;
};

/** PostgreSQL's channel for queue events; one for all queues, each payload names its queue. */
export const QUEUE_EVENTS_CHANNEL = 'loupe_queue_events';

export function queueEvent(type: AnnotationQueueEvent['type'], queueId: string, itemId?: string): AnnotationQueueEvent {
  return { type, queue_id: queueId, ...(itemId === undefined ? {} : { item_id: itemId }), at: new Date().toISOString() };
}
