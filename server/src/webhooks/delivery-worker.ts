import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { WebhookSettings } from '../config.ts';
import type { SqlScope } from '../db/sql.ts';
import type { ResolveHost } from '../domain/webhook-addresses.ts';
import { deliveryBody, type DeliveryLease, type DueDelivery, type WebhookWake, type WrittenEvent } from '../domain/webhook-outbox.ts';
import {
  claimDueDeliveries,
  eventData,
  recordDelivered,
  recordFailure,
  releaseDelivery,
  removeFinishedDeliveries,
  type AttemptOutcome,
} from '../domain/webhook-deliveries.ts';
import { signatureHeader, type SecretBox } from '../domain/webhook-secrets.ts';
import { WriteBatcher } from '../domain/write-batcher.ts';
import type { Logger } from '../log.ts';
import { AgentPool, sendAttempt } from './webhook-sender.ts';

// The delivery worker of one server process: it leases due deliveries from the outbox
// (domain/webhook-deliveries.ts), attempts each (webhook-sender.ts) and records the outcome. Every
// process runs one; the leases keep them off each other's deliveries, so any number may share a
// PostgreSQL database. It looks for due deliveries every `pollMs`, and at once when a write of
// this process committed events it did not lease to it (wake) or, when every slot was taken, an
// attempt ended. A write of this process leases its new deliveries to it while it has free slots
// (WebhookWake): those it attempts as soon as the write commits, without looking for them.

/**
 * How long a lease lasts beyond twice an attempt's timeout (room for recording the outcome): the
 * time after which a delivery whose process died mid-attempt is taken up by another.
 */
const LEASE_MARGIN_MS = 5_000;
/** How often finished deliveries past their retention are removed. */
const CLEANUP_EVERY_MS = 10 * 60_000;
/** Rows of each kind one clean-up removes at most: the rest waits for the next. */
const CLEANUP_MAX_ROWS = 50_000;
/**
 * Bodies of events this process holds, by event id: of events written here whose deliveries wait
 * (no slot was free), and of events read back for their retries. Every webhook of an event and
 * every retry sends the same bytes.
 */
const BODY_CACHE_BYTES = 32 * 1024 * 1024;

export type DeliveryWorkerOptions = {
  db: SqlScope;
  settings: WebhookSettings;
  box: SecretBox;
  resolve: ResolveHost;
  log: Logger;
};

export class DeliveryWorker implements WebhookWake {
  /** This process's name on the leases it takes. */
  readonly owner = randomUUID();
  readonly #options: DeliveryWorkerOptions;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #abort = new AbortController();
  readonly #pools = new AgentPool();
  readonly #bodies = new LRUCache<string, Buffer>({ maxSize: BODY_CACHE_BYTES, sizeCalculation: (body) => body.length || 1 });
  // Attempts that end together are recorded by one statement (of at most the worker's concurrency,
  // as each attempt waits for its record).
  readonly #delivered = new WriteBatcher<{ delivery: DueDelivery; status: number }>((delivered) =>
    recordDelivered(this.#options.db, { owner: this.owner, delivered }));
  #closed = false;
  #woken = false;
  /** Whether the last look found no free slot, or filled every one: an attempt that ends then looks again. */
  #slotWanted = false;
  #wakeSleeper: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #nextCleanup = Date.now() + 60_000;

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** A lease for a write's new deliveries while a slot is free: they are attempted as soon as it commits. */
  deliveryLease(): DeliveryLease | undefined {
    const { timeoutMs, concurrency } = this.#options.settings;
    if (this.#closed || this.#inFlight.size >= concurrency) return undefined;
    return { owner: this.owner, until: new Date(Date.now() + 2 * timeoutMs + LEASE_MARGIN_MS) };
  }

  /**
   * Events this process's writes committed: the deliveries leased here are attempted now (or, with
   * every slot taken meanwhile, given back); for the others the worker looks now, and keeps their
   * event's body for them. An empty list only asks it to look. (A body whose deliveries all
   * started is not kept: a retry, rare, reads it back.)
   */
  webhooksWritten(events: readonly WrittenEvent[]): void {
    const { concurrency, timeoutMs } = this.#options.settings;
    let look = !events.length;
    for (const { id, body, leased } of events) {
      let waiting = !leased;
      // An attempt starts only if it ends within the lease (a write that took long may have used most of it).
      const inTime = leased !== null && Date.now() + 2 * timeoutMs < leased.until.getTime();
      for (const delivery of leased?.deliveries ?? []) {
        if (!this.#closed && inTime && this.#inFlight.size < concurrency) this.#start(delivery, body);
        else {
          waiting = true;
          releaseDelivery(this.#options.db, { deliveryId: delivery.id, owner: this.owner }).catch((error: unknown) =>
            this.#options.log.warn({ err: error, delivery_id: delivery.id }, 'webhooks: giving back a delivery failed; it is due when its lease ends'));
        }
      }
      if (!waiting) continue;
      look = true;
      if (body.length <= BODY_CACHE_BYTES / 8) this.#bodies.set(id, body);
    }
    if (look) this.wake();
  }

  /** Look for due deliveries now (events were written, or a slot came free). */
  wake(): void {
    this.#woken = true;
    this.#wakeSleeper?.();
  }

  /** Attempts under way in this process. */
  get attempting(): number {
    return this.#inFlight.size;
  }

  /** Stops claiming; attempts under way are abandoned and their deliveries given back, due at once. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#abort.abort();
    this.wake();
    await this.#loop;
    await Promise.all(this.#inFlight.values());
    this.#pools.close();
  }

  async #run(): Promise<void> {
    const { settings, log } = this.#options;
    while (!this.#closed) {
      this.#woken = false;
      let full = false;
      try {
        const free = settings.concurrency - this.#inFlight.size;
        if (free > 0) {
          const now = new Date();
          const due = await claimDueDeliveries(this.#options.db, {
            owner: this.owner,
            limit: free,
            now,
            leaseUntil: new Date(now.getTime() + 2 * settings.timeoutMs + LEASE_MARGIN_MS),
          });
          const bodies = await this.#bodiesOf(due);
          for (const delivery of due) this.#start(delivery, bodies.get(delivery.eventId));
          full = due.length === free;
        }
        this.#slotWanted = free <= 0 || full;
        if (Date.now() >= this.#nextCleanup) {
          this.#nextCleanup = Date.now() + CLEANUP_EVERY_MS;
          const removed = await removeFinishedDeliveries(this.#options.db, {
            before: new Date(Date.now() - settings.retentionDays * 86_400_000),
            maxRows: CLEANUP_MAX_ROWS,
          });
          if (removed) log.info({ removed }, 'webhooks: finished deliveries past their retention removed');
        }
      } catch (error) {
        if (this.#closed) break;
        log.warn({ err: error }, 'webhooks: looking for due deliveries failed; trying again');
      }
      // Every free slot taken: more may be due, looked for as soon as a slot frees (its attempt wakes the loop).
      if (!full) await this.#sleep(settings.pollMs);
    }
  }

  /** The bodies of these deliveries' events: those this process holds, the others read. */
  async #bodiesOf(due: readonly DueDelivery[]): Promise<Map<string, Buffer>> {
    const bodies = new Map<string, Buffer>();
    for (const { eventId } of due) {
      const body = this.#bodies.get(eventId);
      if (body) bodies.set(eventId, body);
    }
    const missing = [...new Set(due.map((delivery) => delivery.eventId).filter((id) => !bodies.has(id)))];
    const data = await eventData(this.#options.db, missing);
    for (const delivery of due) {
      const dataText = data.get(delivery.eventId);
      if (dataText === undefined || bodies.has(delivery.eventId)) continue;
      const { body } = deliveryBody({ type: delivery.type, createdAt: delivery.eventAt, dataJson: dataText });
      bodies.set(delivery.eventId, body);
      this.#bodies.set(delivery.eventId, body);
    }
    return bodies;
  }

  #sleep(ms: number): Promise<void> {
    if (this.#woken || this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wakeSleeper = () => {
        this.#wakeSleeper = undefined;
        done();
      };
    });
  }

  #start(delivery: DueDelivery, body: Buffer | undefined): void {
    const attempt = this.#attempt(delivery, body)
      .catch((error: unknown) => this.#options.log.warn({ err: error, delivery_id: delivery.id }, 'webhooks: recording an attempt failed'))
      .finally(() => {
        this.#inFlight.delete(delivery.id);
        // A free slot matters only when the slots were the limit; else the worker is woken by
        // writes and its poll (an ending attempt's look found nothing due at batch 1,000 of
        // feedback: two empty claims per event).
        if (this.#slotWanted) this.wake();
      });
    this.#inFlight.set(delivery.id, attempt);
  }

  async #attempt(delivery: DueDelivery, body: Buffer | undefined): Promise<void> {
    const { settings, box, db } = this.#options;
    let outcome: AttemptOutcome;
    let secrets: string[] | undefined;
    try {
      secrets = delivery.sealedSecrets.map((sealed) => box.open(sealed));
    } catch (error) {
      outcome = { kind: 'failed', status: null, error: (error as Error).message };
    }
    if (!body) outcome = { kind: 'failed', status: null, error: 'the event could not be read' };
    else if (secrets) {
      const timestamp = Math.floor(Date.now() / 1000);
      outcome = await sendAttempt({
        url: delivery.url,
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Loupe-Webhooks/1',
          'webhook-id': delivery.eventId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, { id: delivery.eventId, timestamp, body }),
        },
        timeoutMs: settings.timeoutMs,
        policy: { allowHttp: settings.allowHttp, allowPrivate: settings.allowPrivate, resolve: this.#options.resolve },
        pools: this.#pools,
        signal: this.#abort.signal,
      });
    }
    if (this.#abort.signal.aborted) {
      await releaseDelivery(db, { deliveryId: delivery.id, owner: this.owner }).catch(() => undefined);
      return;
    }
    if (outcome!.kind === 'delivered') await this.#delivered.add({ delivery, status: outcome!.status });
    else await recordFailure(db, { delivery, owner: this.owner, outcome: outcome!, schedule: settings.retrySchedule });
  }
}
