import type { Config } from '../config.ts';
import { dialectOf } from '../db/orm.ts';
import type { Logger } from '../log.ts';
import type { WebhookWake } from '../domain/webhook-outbox.ts';
import { memoryQueueEvents } from './memory-queue-events.ts';
import { postgresQueueEvents } from './postgres-queue-events.ts';
import type { QueueEventBus } from './queue-event-bus.ts';

/**
 * The queue event bus for the configured database (see the two implementations). Writes that
 * wrote webhook events call `webhooksWritten` after their commit.
 */
export function createQueueEvents(config: Config, log: Logger, webhooksWritten: WebhookWake['webhooksWritten']): QueueEventBus {
  return dialectOf(config.databaseUrl) === 'sqlite'
    ? memoryQueueEvents(webhooksWritten)
    : postgresQueueEvents({ databaseUrl: config.databaseUrl, connectMs: config.dbTimeouts.connectMs, log, webhooksWritten });
}
