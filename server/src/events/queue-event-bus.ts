import { AnnotationQueueEvent } from '@loupe/shared';
import { z } from 'zod';
import type { SqlScope } from '../db/sql.ts';
import type { QueueEventSubscriber } from './local-fanout.ts';

/**
 * A queue event as it travels from a write to the streams: with the queue's project, by which the
 * streams of a whole project find it. Streams hand it on without the project (see LocalFanout).
 */
export const QueueBusEvent = AnnotationQueueEvent.extend({ project_id: z.string() });
export type QueueBusEvent = z.infer<typeof QueueBusEvent>;

/** What a stream follows: one queue, or every queue of one project. */
export type EventTopic = { queue_id: string } | { project_id: string };

/**
 * What a write does with the events it causes: `publish` inside its transaction, `committed` once
 * the transaction has committed. Only one of them does anything, depending on the database:
 * PostgreSQL sends a NOTIFY in the transaction (the database delivers it to every server process
 * if and only if the transaction commits); SQLite, which only one process can serve, hands the
 * events to this process's subscribers after the commit.
 */
export type QueueEventPublisher = {
  publish(tx: SqlScope, events: readonly QueueBusEvent[]): Promise<void>;
  committed(events: readonly QueueBusEvent[]): void;
};

/** The events of queues, for writers (publisher) and for the open event streams of this process. */
export type QueueEventBus = QueueEventPublisher & {
  subscribe(topic: EventTopic, subscriber: QueueEventSubscriber): () => void;
  /** Resolves once events written from now on will reach subscribers (PostgreSQL: LISTEN is in place). */
  ready(): Promise<void>;
  /** Open subscriptions in this process. */
  readonly subscriberCount: number;
  /** Ends every open stream (shutdown begins). */
  endStreams(): void;
  /** Releases what the bus holds (the LISTEN connection). */
  close(): Promise<void>;
};

/**
 * PostgreSQL's channel for queue events; one for all queues, each payload names its queue and
 * project, so one NOTIFY serves the streams of the queue and those of its project.
 */
export const QUEUE_EVENTS_CHANNEL = 'loupe_queue_events';

export function queueEvent(type: AnnotationQueueEvent['type'], projectId: string, queueId: string, itemId?: string): QueueBusEvent {
  return { type, queue_id: queueId, ...(itemId === undefined ? {} : { item_id: itemId }), at: new Date().toISOString(), project_id: projectId };
}
