import type { Config } from '../config.ts';
import type { SqlScope } from '../db/sql.ts';
import { dialectOf } from '../db/orm.ts';
import type { Logger } from '../log.ts';
import type { WebhookWake } from '../domain/webhook-outbox.ts';
import { memoryQueueEvents } from './memory-queue-events.ts';
import { postgresQueueEvents } from './postgres-queue-events.ts';
import type { QueueEventBus } from './queue-event-bus.ts';

/**
 * The queue event bus for the configured database (see the two implementations), `db` its pool.
 * Writes reach this process's webhook delivery worker through it (`webhooks`).
 */
export function createQueueEvents({ config, db, log, webhooks }: { config: Config; db: SqlScope; log: Logger; webhooks: WebhookWake }): QueueEventBus {
  return dialectOf(config.databaseUrl) === 'sqlite'
    ? memoryQueueEvents(webhooks)
    : postgresQueueEvents({ db, databaseUrl: config.databaseUrl, connectMs: config.dbTimeouts.connectMs, log, webhooks });
}
