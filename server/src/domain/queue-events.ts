import { AnnotationQueueEvent, type ProgressState } from '@loupe/shared';
import { z } from 'zod';
import { sqlTransaction, type SqlScope } from '../db/sql.ts';
import { writeWebhookEvents, type WebhookAnnouncement, type WebhookWake, type WrittenEvent } from './webhook-outbox.ts';

/**
 * A queue event as it travels from a write to the streams: with the queue's project, by which the
 * streams of a whole project find it. Streams hand it on without the project (events/local-fanout.ts).
 */
export const QueueBusEvent = AnnotationQueueEvent.extend({ project_id: z.string() });
export type QueueBusEvent = z.infer<typeof QueueBusEvent>;

/**
 * What a write does with the events it causes: `publish` inside its transaction, `committed` once
 * the transaction has committed. The server's buses (events/) act on `committed` only: on
 * PostgreSQL a NOTIFY of the committed writes' events, which the database delivers to every server
 * process; on SQLite, which only one process can serve, a hand-over to this process's
 * subscribers. The admin tool's writes NOTIFY in their transaction (`publish`). A write that
 * wrote webhook events says so after its commit (WebhookWake).
 */
export type QueueEventPublisher = WebhookWake & {
  publish(tx: SqlScope, events: readonly QueueBusEvent[]): Promise<void>;
  committed(events: readonly QueueBusEvent[]): void;
};

/** Records an event of the write: for live streams, and, given an announcement, for webhooks too. */
export type RecordEvent = (event: QueueBusEvent, announcement?: WebhookAnnouncement) => void;

/** Where an event happened: a queue of a project, and the item when it is about one. */
export type QueueEventPlace = { projectId: string; queueId: string; itemId?: string };

export function queueEvent(type: AnnotationQueueEvent['type'], { projectId, queueId, itemId }: QueueEventPlace): QueueBusEvent {
  return { type, queue_id: queueId, ...(itemId === undefined ? {} : { item_id: itemId }), at: new Date().toISOString(), project_id: projectId };
}

/**
 * `sqlTransaction` for a write that changes queues: the events `work` records are published
 * inside the transaction and handed on after it commits (QueueEventPublisher); their webhook
 * announcements are written to the outbox in the same transaction (webhook-outbox.ts).
 * A write that fails publishes and announces nothing.
 */
export async function publishingTransaction<T>(db: SqlScope, events: QueueEventPublisher, work: (tx: SqlScope, record: RecordEvent) => Promise<T>): Promise<T> {
  const recorded: QueueBusEvent[] = [];
  const announced: WebhookAnnouncement[] = [];
  let written: WrittenEvent[] = [];
  const result = await sqlTransaction(db, async (tx) => {
    const value = await work(tx, (event, announcement) => {
      recorded.push(event);
      if (announcement) announced.push(announcement);
    });
    if (recorded.length) await events.publish(tx, recorded);
    written = await writeWebhookEvents(tx, { announcements: announced, wake: events });
    return value;
  });
  events.committed(recorded);
  if (written.length) events.webhooksWritten(written);
  return result;
}

/** The webhook announcement of an annotator's new progress state of an item. */
export function itemProgressed({ item, annotatorId, state }: { item: { id: string; project_id: string; queue_id: string; call_id: string }; annotatorId: string; state: ProgressState }): WebhookAnnouncement {
  return {
    type: 'annotation_queue.item.progress',
    data: { project_id: item.project_id, queue_id: item.queue_id, item_id: item.id, call_id: item.call_id, annotator_user_id: annotatorId, annotation_state: state },
  };
}
