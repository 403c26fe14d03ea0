import { AnnotationQueueEvent } from '@loupe/shared';
import { z } from 'zod';
import { sqlTransaction, type SqlScope } from '../db/sql.ts';

/**
 * A queue event as it travels from a write to the streams: with the queue's project, by which the
 * streams of a whole project find it. Streams hand it on without the project (events/local-fanout.ts).
 */
export const QueueBusEvent = AnnotationQueueEvent.extend({ project_id: z.string() });
export type QueueBusEvent = z.infer<typeof QueueBusEvent>;

/**
 * What a write does with the events it causes: `publish` inside its transaction, `committed` once
 * the transaction has committed. Only one of them does anything, depending on the database:
 * PostgreSQL sends a NOTIFY in the transaction (the database delivers it to every server process
 * if and only if the transaction commits); SQLite, which only one process can serve, hands the
 * events to this process's subscribers after the commit. events/ implements it.
 */
export type QueueEventPublisher = {
  publish(tx: SqlScope, events: readonly QueueBusEvent[]): Promise<void>;
  committed(events: readonly QueueBusEvent[]): void;
};

/** Where an event happened: a queue of a project, and the item when it is about one. */
export type QueueEventPlace = { projectId: string; queueId: string; itemId?: string };

export function queueEvent(type: AnnotationQueueEvent['type'], { projectId, queueId, itemId }: QueueEventPlace): QueueBusEvent {
  return { type, queue_id: queueId, ...(itemId === undefined ? {} : { item_id: itemId }), at: new Date().toISOString(), project_id: projectId };
}

/**
 * `sqlTransaction` for a write that changes queues: the events `work` records are published
 * inside the transaction (PostgreSQL NOTIFY) and handed on after it commits (SQLite). A write
 * that fails publishes nothing.
 */
export async function publishingTransaction<T>(
  db: SqlScope,
  events: QueueEventPublisher,
  work: (tx: SqlScope, record: (event: QueueBusEvent) => void) => Promise<T>,
): Promise<T> {
  const recorded: QueueBusEvent[] = [];
  const result = await sqlTransaction(db, async (tx) => {
    const value = await work(tx, (event) => recorded.push(event));
    if (recorded.length) await events.publish(tx, recorded);
    return value;
  });
  events.committed(recorded);
  return result;
}
