import pg from 'pg';
import { onPostgres, sqlRows, UNSYNCED_COMMIT, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { secretMasker } from '../db/database-url.ts';
import type { Logger } from '../log.ts';
import { LocalFanout } from './local-fanout.ts';
import { WriteBatcher } from '../domain/write-batcher.ts';
import { QueueBusEvent, type QueueEventPublisher } from '../domain/queue-events.ts';
import type { DeliveryLease, WebhookWake, WrittenEvent } from '../domain/webhook-outbox.ts';
import { QUEUE_EVENTS_CHANNEL, type EventTopic, type QueueEventBus } from './queue-event-bus.ts';

const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/**
 * How often the LISTEN connection is probed. A connection that died without a word (a firewall
 * dropped it) delivers nothing and says nothing; a probe that fails or gets no answer ends it and
 * a new one is opened, so the events are back within about this long.
 */
export const LISTEN_PROBE_MS = 10_000;

/**
 * The bus on PostgreSQL, where several server processes may share the database. A write's events
 * are sent with `pg_notify` once it has committed (so only a write that committed is announced),
 * from a statement of their own: PostgreSQL commits the transactions that notify one at a time,
 * holding a lock of the whole database from before the commit until the commit is on disk, so a
 * NOTIFY inside the writes made every write with events wait for every other's disk flush
 * (progress on PostgreSQL against its hand-written baseline: 0.52–0.56 with it, 0.65–0.71
 * without). The events of writes that commit meanwhile go in one statement, which does not wait
 * for its own flush (a notification is delivered at the commit). A process that dies between a
 * write's commit and its events' statement leaves them unsent: the streams show that change with
 * the next event, or when their clients reconnect.
 *
 * Each process holds one connection of its own (outside the pool) that LISTENs on the channel and
 * hands what arrives to its subscribers: one notification per event, for the streams of its queue
 * and those of its project alike.
 *
 * When that connection is lost it is opened again (100 ms, doubling up to 5 s), and every open
 * subscription is then told that events sent meanwhile were missed (LocalFanout.deliverMissed),
 * so that clients refetch.
 */
class PostgresQueueEvents implements QueueEventBus {
  readonly #fanout = new LocalFanout();
  readonly #db: SqlScope;
  /** Events of committed writes, sent by a statement of their own: those that come together, together. */
  readonly #unsent = new WriteBatcher<QueueBusEvent>((events) => this.#send(events));
  readonly #databaseUrl: string;
  readonly #mask: (text: string) => string;
  readonly #connectMs: number;
  readonly #log: Logger;
  readonly #webhooks: WebhookWake;
  #client: pg.Client | undefined;
  readonly #lost = new WeakSet<pg.Client>();
  #closed = false;
  #connectedBefore = false;
  #delay = RECONNECT_FIRST_MS;
  #retry: NodeJS.Timeout | undefined;
  #probe: NodeJS.Timeout | undefined;
  #listening!: Promise<void>;
  #markListening!: () => void;

  constructor({ db, databaseUrl, connectMs, log, webhooks }: PostgresBusOptions) {
    this.#db = db;
    this.#webhooks = webhooks;
    this.#databaseUrl = databaseUrl;
    this.#mask = secretMasker(databaseUrl);
    this.#connectMs = connectMs;
    this.#log = log;
    this.#notListening();
    void this.#connect();
  }

  async publish(): Promise<void> {
    // Sent once the write has committed (committed).
  }

  committed(events: readonly QueueBusEvent[]): void {
    if (!events.length) return;
    if (this.#unsent.waiting + events.length > MAX_UNSENT) {
      // The database has not taken the events for a while: these are dropped, and this process's
      // streams told to refetch (the others hear of the change with the next event).
      this.#log.warn({ dropped: events.length }, 'queue events: too many events wait to be sent; dropped');
      this.#fanout.deliverMissed(new Date());
      return;
    }
    // #send never fails: the promise of each event is left alone.
    for (const event of events) void this.#unsent.add(event);
  }

  /** Sends events, in statements of at most MAX_EVENTS_PER_STATEMENT; never throws. */
  async #send(events: readonly QueueBusEvent[]): Promise<void> {
    for (let i = 0; i < events.length; i += MAX_EVENTS_PER_STATEMENT) {
      const chunk = events.slice(i, i + MAX_EVENTS_PER_STATEMENT);
      try {
        await notifyQueueEvents(this.#db, chunk, { unsynced: true });
      } catch (error) {
        // The database delivers to every process, this one included: without it, only this one's streams hear.
        this.#log.warn({ err: error, events: chunk.length }, 'queue events: sending events failed; only this process\'s streams get them');
        for (const event of chunk) this.#fanout.deliver(event);
      }
    }
  }

  webhooksWritten(events: readonly WrittenEvent[]): void {
    this.#webhooks.webhooksWritten(events);
  }

  deliveryLease(): DeliveryLease | undefined {
    return this.#webhooks.deliveryLease();
  }

  subscribe(topic: EventTopic, subscriber: Parameters<QueueEventBus['subscribe']>[1]): () => void {
    return this.#fanout.subscribe(topic, subscriber);
  }

  ready(): Promise<void> {
    return this.#listening;
  }

  get subscriberCount(): number {
    return this.#fanout.size;
  }

  endStreams(): void {
    this.#fanout.endAll();
  }

  async close(): Promise<void> {
    this.#closed = true;
    // The events of writes that committed are sent before the pool closes.
    await this.#unsent.idle();
    clearTimeout(this.#retry);
    clearInterval(this.#probe);
    const client = this.#client;
    this.#client = undefined;
    if (client) {
      this.#lost.add(client);
      await client.end().catch(() => undefined);
    }
  }

  #notListening(): void {
    this.#listening = new Promise((resolve) => (this.#markListening = resolve));
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({
      connectionString: this.#databaseUrl,
      connectionTimeoutMillis: this.#connectMs,
      query_timeout: this.#connectMs,
      keepAlive: true,
      application_name: 'loupe-events',
    });
    client.on('notification', (message) => {
      if (message.channel === QUEUE_EVENTS_CHANNEL && message.payload) this.#received(message.payload);
    });
    client.on('error', (error) => this.#connectionLost(client, error));
    client.on('end', () => this.#connectionLost(client));
    try {
      await client.connect();
      await client.query(`listen ${QUEUE_EVENTS_CHANNEL}`);
    } catch (error) {
      this.#connectionLost(client, error);
      return;
    }
    if (this.#closed || this.#lost.has(client)) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#delay = RECONNECT_FIRST_MS;
    if (this.#connectedBefore) {
      this.#log.info('queue events: listening again');
      this.#fanout.deliverMissed(new Date());
    }
    this.#connectedBefore = true;
    this.#markListening();
    this.#probe = setInterval(() => {
      client.query('select 1').catch((error: unknown) => this.#connectionLost(client, error));
    }, LISTEN_PROBE_MS);
    this.#probe.unref();
  }

  #received(payload: string): void {
    let event: QueueBusEvent;
    try {
      event = QueueBusEvent.parse(JSON.parse(payload));
    } catch {
      this.#log.warn('queue events: a notification that is not a queue event was ignored');
      return;
    }
    this.#fanout.deliver(event);
  }

  #connectionLost(client: pg.Client, error?: unknown): void {
    if (this.#lost.has(client)) return;
    this.#lost.add(client);
    client.end().catch(() => undefined);
    if (this.#client === client) {
      this.#client = undefined;
      clearInterval(this.#probe);
      this.#notListening();
    }
    if (this.#closed) return;
    const reason = error instanceof Error ? this.#mask(error.message) : 'connection ended';
    this.#log.warn({ retry_ms: this.#delay, reason }, 'queue events: the LISTEN connection was lost; reconnecting');
    this.#retry = setTimeout(() => void this.#connect(), this.#delay);
    this.#retry.unref();
    this.#delay = Math.min(this.#delay * 2, RECONNECT_MAX_MS);
  }
}

/** Events one statement sends at most. */
const MAX_EVENTS_PER_STATEMENT = 1_000;
/** Events of committed writes that may wait for the database at once; more are dropped (committed). */
const MAX_UNSENT = 10_000;

/**
 * NOTIFY: PostgreSQL delivers the events to every listener when the transaction of `tx` commits.
 * Several events in one statement. `unsynced`: the statement is its own transaction, and its
 * commit does not wait for the disk (it changes nothing a crash could lose but the notifications,
 * which are delivered at the commit).
 */
async function notifyQueueEvents(tx: SqlScope, events: readonly QueueBusEvent[], { unsynced = false } = {}): Promise<void> {
  const unsyncedFrom = unsynced ? sql`, ${UNSYNCED_COMMIT}` : sql``;
  if (events.length === 1 && !unsynced) await sqlRows(tx, sql`select pg_notify(${QUEUE_EVENTS_CHANNEL}, ${JSON.stringify(events[0])})`);
  else if (events.length) {
    const payloads = events.map((event) => JSON.stringify(event));
    await sqlRows(tx, sql`select count(pg_notify(${QUEUE_EVENTS_CHANNEL}, payload)) as sent from unnest(${payloads}::text[]) as payload${unsyncedFrom}`);
  }
}

/**
 * For writes made outside a server (the admin tool's demo data): on PostgreSQL the running servers
 * hear of them; on SQLite nothing is sent (the file is served by one process, not this one).
 */
export const notifyOnlyPublisher: QueueEventPublisher = {
  publish: (tx, events) => (onPostgres(tx) ? notifyQueueEvents(tx, events) : Promise.resolve()),
  committed: () => {},
  // The servers' delivery workers find the events at their next poll: none is leased.
  webhooksWritten: () => {},
  deliveryLease: () => undefined,
};

/**
 * The pool that sends the events, the database the LISTEN connection opens, how long connecting
 * may take, the log, and whom to tell of webhook events written.
 */
type PostgresBusOptions = { db: SqlScope; databaseUrl: string; connectMs: number; log: Logger; webhooks: WebhookWake };

export function postgresQueueEvents(options: PostgresBusOptions): QueueEventBus {
  return new PostgresQueueEvents(options);
}
