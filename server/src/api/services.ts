import type { AuthBrake } from '../auth/brake.ts';
import type { OidcClient } from '../auth/oidc-client.ts';
import type { OidcStateSeal } from '../auth/oidc-state.ts';
import type { ModelCatalog } from '../catalog/catalog.ts';
import type { Config } from '../config.ts';
import type { Orm } from '../db/orm.ts';
import type { CursorSeal } from '../domain/cursor.ts';
import type { HeapBudget } from '../domain/heap-budget.ts';
import type { QueueEventBus } from '../events/queue-event-bus.ts';
import type { StreamSlots } from '../events/stream-slots.ts';
import type { Logger } from '../log.ts';
import type { ResolveHost } from '../domain/webhook-addresses.ts';
import type { SecretBox } from '../domain/webhook-secrets.ts';
import type { DeliveryWorker } from '../webhooks/delivery-worker.ts';

/** What every request can reach: long-lived parts built once at start-up. */
export type Services = {
  config: Config;
  orm: Orm;
  log: Logger;
  catalog: ModelCatalog;
  authFailures: AuthBrake;
  /** Queue events: published by writes, delivered to this process's open event streams. */
  queueEvents: QueueEventBus;
  eventStreams: StreamSlots;
  /** Seals query cursors under the server key. */
  cursorSeal: CursorSeal;
  /** The heap that request bodies being read and answers being made share (LOUPE_BODY_BUDGET_BYTES). */
  heapBudget: HeapBudget;
  /** This process's worker of queue rules' backfills: woken when a rule is created or changed here. */
  ruleBackfills: { wake(): void };
  /** Webhooks: the box their secrets are sealed in, the resolver their hosts are checked with, this process's delivery worker. */
  webhooks: { box: SecretBox; resolve: ResolveHost; worker: DeliveryWorker };
  /** Single sign-on (LOUPE_OIDC_*): the provider's client and the seal of attempts' state cookies; undefined when not configured. */
  singleSignOn: { client: OidcClient; seal: OidcStateSeal } | undefined;
};
