import type { AnnotationQueueEvent } from '@loupe/shared';
import type { QueueEventPublisher } from '../domain/queue-events.ts';

/** What a stream follows: one queue, or every queue of one project. */
export type EventTopic = { queue_id: string } | { project_id: string };

/**
 * Why a stream ends that its client should open again: it is sent as a 503, which tRPC's client
 * answers by reconnecting (a stream that simply ended would be taken as finished for good).
 */
export type Renewal = 'shutdown' | 'expired' | 'missed';

/** One subscriber of a queue's or a project's events in this process (an open event stream). */
export type QueueEventSubscriber = {
  push(event: AnnotationQueueEvent): void;
  /** Ends the subscriber's stream and tells its client to reconnect. */
  end(renewal: Renewal): void;
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
