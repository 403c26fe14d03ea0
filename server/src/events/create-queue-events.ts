import type { Config } from '../config.ts';
import { dialectOf } from '../db/orm.ts';
import type { Logger } from '../log.ts';
import { memoryQueueEvents } from './memory-queue-events.ts';
import { postgresQueueEvents } from './postgres-queue-events.ts';
import type { QueueEventBus } from './queue-event-bus.ts';

/** The queue event bus for the configured database (see the two implementations). */
export function createQueueEvents(config: Config, log: Logger): QueueEventBus {
  return dialectOf(config.databaseUrl) === 'sqlite' ? memoryQueueEvents() : postgresQueueEvents(config.databaseUrl, config.dbTimeouts.connectMs, log);
}
