import { sqlTransaction, type SqlScope } from '../db/sql.ts';
import type { QueueBusEvent, QueueEventPublisher } from './queue-event-bus.ts';

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
