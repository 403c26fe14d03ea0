import { LocalFanout } from './local-fanout.ts';
import type { QueueBusEvent } from '../domain/queue-events.ts';
import type { QueueEventBus } from './queue-event-bus.ts';
import type { WebhookWake } from '../domain/webhook-outbox.ts';

/**
 * The bus on SQLite: one server process owns the database file (db/sqlite-server-lock.ts), so
 * every write happens here and an in-process hand-over after each commit reaches every subscriber.
 */
export function memoryQueueEvents(webhooks: WebhookWake): QueueEventBus {
  const fanout = new LocalFanout();
  return {
    publish: async () => {},
    committed(events: readonly QueueBusEvent[]) {
      // Outside the writer's own call: nothing a subscriber does can reach the write.
      if (events.length) queueMicrotask(() => events.forEach((event) => fanout.deliver(event)));
    },
    webhooksWritten: (events) => webhooks.webhooksWritten(events),
    deliveryLease: () => webhooks.deliveryLease(),
    subscribe: (topic, subscriber) => fanout.subscribe(topic, subscriber),
    ready: async () => {},
    get subscriberCount() {
      return fanout.size;
    },
    endStreams: () => fanout.endAll(),
    close: async () => {},
  };
}
