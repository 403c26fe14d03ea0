import { randomUUID } from 'node:crypto';
import type { WebhookSettings } from '../config.ts';
import type { SqlScope } from '../db/sql.ts';
import type { ResolveHost } from '../domain/webhook-addresses.ts';
import {
  claimDueDeliveries,
  recordAttempt,
  releaseDelivery,
  removeFinishedDeliveries,
  type AttemptOutcome,
  type DueDelivery,
} from '../domain/webhook-deliveries.ts';
import { signatureHeader, type SecretBox } from '../domain/webhook-secrets.ts';
import type { Logger } from '../log.ts';
import { sendAttempt } from './webhook-sender.ts';

// The delivery worker of one server process: it leases due deliveries from the outbox
// (domain/webhook-deliveries.ts), attempts each (webhook-sender.ts) and records the outcome. Every
// process runs one; the leases keep them off each other's deliveries, so any number may share a
// PostgreSQL database. It looks for due deliveries every `pollMs`, and at once when a write of
// this process committed events (wake) or an attempt ended (a slot is free).

/**
 * How long a lease lasts beyond twice an attempt's timeout (room for recording the outcome): the
 * time after which a delivery whose process died mid-attempt is taken up by another.
 */
const LEASE_MARGIN_MS = 5_000;
/** How often finished deliveries past their retention are removed. */
const CLEANUP_EVERY_MS = 10 * 60_000;
/** Rows of each kind one clean-up removes at most: the rest waits for the next. */
const CLEANUP_MAX_ROWS = 50_000;

export type DeliveryWorkerOptions = {
  db: SqlScope;
  settings: WebhookSettings;
  box: SecretBox;
  resolve: ResolveHost;
  log: Logger;
};

export class DeliveryWorker {
  /** This process's name on the leases it takes. */
  readonly owner = randomUUID();
  readonly #options: DeliveryWorkerOptions;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #abort = new AbortController();
  #closed = false;
  #woken = false;
  #wakeSleeper: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #nextCleanup = Date.now() + 60_000;

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#loop ??= this.#run();
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
          for (const delivery of due) this.#start(delivery);
          full = due.length === free;
        }
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

  #start(delivery: DueDelivery): void {
    const attempt = this.#attempt(delivery)
      .catch((error: unknown) => this.#options.log.warn({ err: error, delivery_id: delivery.id }, 'webhooks: recording an attempt failed'))
      .finally(() => {
        this.#inFlight.delete(delivery.id);
        this.wake();
      });
    this.#inFlight.set(delivery.id, attempt);
  }

  async #attempt(delivery: DueDelivery): Promise<void> {
    const { settings, box, db } = this.#options;
    let outcome: AttemptOutcome;
    let secrets: string[] | undefined;
    try {
      secrets = delivery.sealedSecrets.map((sealed) => box.open(sealed));
    } catch (error) {
      outcome = { kind: 'failed', status: null, error: (error as Error).message };
    }
    if (secrets) {
      const timestamp = Math.floor(Date.now() / 1000);
      const body = `{"type":${JSON.stringify(delivery.type)},"timestamp":${JSON.stringify(delivery.eventAt.toISOString())},"data":${delivery.dataText}}`;
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
        signal: this.#abort.signal,
      });
    }
    if (this.#abort.signal.aborted) {
      await releaseDelivery(db, { deliveryId: delivery.id, owner: this.owner }).catch(() => undefined);
      return;
    }
    await recordAttempt(db, { delivery, owner: this.owner, outcome: outcome!, schedule: settings.retrySchedule });
  }
}
