import {
  FEEDBACK_CREATED_MAX_RECORDS,
  type DeliveredEventType,
  type FeedbackCreatedData,
  type ItemProgressData,
  type ItemsAddedData,
  type QueueCompletedData,
} from '@loupe/shared';
import { jsonFromSql, onPostgres, sqlDate, sqlRows, sqlRunTogether, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { newId } from './ids.ts';
import { REQUIRED_FROM_QUEUE } from './coverage.ts';
import { COUNTED_IN_QUEUE } from './queue-access.ts';
import { signingSecrets, type SigningRow } from './webhooks.ts';

// The outbox of webhooks (contract 5.13): a write that causes events writes them, and one pending
// delivery per subscribed webhook, in its own transaction. So an event exists if and only if its
// change committed (a failed write announces nothing; a crash after the commit loses nothing),
// and the delivery workers (webhooks/) send what they find here. A project without webhooks costs
// one indexed read per write that causes events, and nothing is stored.

/**
 * What a queue write announces: an event type and its thin payload (ids, not contents). Feedback
 * writes announce theirs with writeFeedbackCreated, `webhook.test` is written by its route.
 */
export type WebhookAnnouncement =
  | { type: 'annotation_queue.item.progress'; data: ItemProgressData }
  | { type: 'annotation_queue.items.added'; data: ItemsAddedData }
  | { type: 'annotation_queue.completed'; data: QueueCompletedData };

/** A delivery leased for one attempt, with what the attempt needs. */
export type DueDelivery = {
  id: string;
  webhookId: string;
  eventId: string;
  attempts: number;
  type: string;
  eventAt: Date;
  url: string;
  /** Sealed secrets: the current one, and the previous one while its overlap lasts. */
  sealedSecrets: string[];
  /** Whether the webhook was in a run of failures when leased (a success then ends it). */
  webhookFailing: boolean;
};

/** A lease on deliveries for one process's delivery worker: its name, and until when. */
export type DeliveryLease = { owner: string; until: Date };

/**
 * An event as written: its id, the body every delivery of it sends, and its deliveries when the
 * write created them leased to this process's worker, with the lease's end (null: they wait, due,
 * for any worker).
 */
export type WrittenEvent = { id: string; body: Buffer; leased: { deliveries: DueDelivery[]; until: Date } | null };

/**
 * The UTF-8 bytes of text pieces one after another, written piece by piece: the joined text is
 * never made (a body's head and payload joined would be copied into one more string of the
 * payload's size). A piece of as many UTF-8 bytes as characters is all ASCII, its own UTF-8, and
 * copying it as Latin-1 costs a fraction of encoding it. (Only that test tells: text written as
 * Latin-1 keeps each character's low byte, so U+4E2D would pass for '-'.)
 */
function utf8Of(pieces: readonly string[]): Buffer {
  const lengths = pieces.map((piece) => Buffer.byteLength(piece, 'utf8'));
  const bytes = Buffer.allocUnsafe(lengths.reduce((sum, length) => sum + length, 0));
  let offset = 0;
  // As many bytes as characters: every character is ASCII.
  pieces.forEach((piece, index) => (offset += bytes.write(piece, offset, lengths[index] === piece.length ? 'latin1' : 'utf8')));
  return bytes;
}

/**
 * A delivery's body, `{type, timestamp, data}` around the payload's JSON text, as UTF-8 bytes
 * made once; `data` is the payload's own bytes within it (what the database stores).
 */
export function deliveryBody({ type, createdAt, dataJson }: { type: string; createdAt: Date; dataJson: string }): { body: Buffer; data: Buffer } {
  // The head is ASCII (an event type, an ISO date): its length in characters is its length in bytes.
  const head = `{"type":${JSON.stringify(type)},"timestamp":"${createdAt.toISOString()}","data":`;
  const body = utf8Of([head, dataJson, '}']);
  return { body, data: body.subarray(head.length, body.length - 1) };
}

/**
 * This process's delivery worker, as writes see it. A write about to create deliveries asks for a
 * lease: given one (the worker has a free slot), they are created leased to it, and after the
 * commit the worker attempts them at once, neither looking for them nor reading their payloads
 * back. Without one they are due for any process's worker, which finds them when it looks (told
 * of the commit, this one looks at once; an empty list says only "look"). A speed-up only: every
 * process polls, and a dead process's leases expire.
 */
export type WebhookWake = {
  webhooksWritten(events: readonly WrittenEvent[]): void;
  deliveryLease(): DeliveryLease | undefined;
};

/** A live, enabled webhook of a project: what it subscribes to, and what an attempt needs. */
type Subscriber = { id: string; events: string[]; url: string; sealedSecrets: string[]; failing: boolean };

/**
 * Writes the events of `announcements` that some live, enabled webhook of their project
 * subscribes to, each with one pending delivery per such webhook, due now. Progress that finished
 * the last unfinished item of a queue adds `annotation_queue.completed`. Runs inside the
 * caller's transaction; returns the events written.
 */
export async function writeWebhookEvents(tx: SqlScope, { announcements, wake }: { announcements: readonly WebhookAnnouncement[]; wake: WebhookWake }): Promise<WrittenEvent[]> {
  const written: WrittenEvent[] = [];
  if (!announcements.length) return written;
  const now = new Date();
  for (const [projectId, list] of Map.groupBy(announcements, (announcement) => announcement.data.project_id)) {
    const subscribers = await subscribersOf(tx, { projectId, now });
    if (!subscribers.length) continue;
    const events = [...list];
    if (subscribedTo(subscribers, 'annotation_queue.completed').length) events.push(...(await completions(tx, list)));
    const ready: ReadyEvent[] = [];
    for (const event of events) {
      const hooks = subscribedTo(subscribers, event.type);
      if (hooks.length) ready.push(eventWrites(tx, { type: event.type, projectId, dataJson: JSON.stringify(event.data), hooks, now, wake }));
    }
    written.push(...(await runEventWrites(tx, collect(ready))));
  }
  return written;
}

async function subscribersOf(tx: SqlScope, { projectId, now }: { projectId: string; now: Date }): Promise<Subscriber[]> {
  const rows = await sqlRows<SigningRow & { id: string; events: unknown; url: string; failing_since: unknown }>(tx,
    sql`select id, events, url, secret, previous_secret, previous_secret_expires_at, failing_since
          from webhooks where project_id = ${projectId} and deleted_at is null and disabled_at is null`);
  return rows.map((row) => ({
    id: row.id,
    events: jsonFromSql<string[]>(row.events),
    url: row.url,
    sealedSecrets: signingSecrets(row, now),
    failing: row.failing_since !== null && row.failing_since !== undefined,
  }));
}

function subscribedTo(subscribers: readonly Subscriber[], type: DeliveredEventType): Subscriber[] {
  return subscribers.filter((hook) => hook.events.includes(type) || hook.events.includes('*'));
}

/**
 * Events made ready to write: what writing them returns, and the statements that write them, in
 * order (an event's before its deliveries).
 */
export type EventWrites = { written: WrittenEvent[]; statements: Statement[] };

/** One event made ready to write: what writing it returns, and its statements. */
type ReadyEvent = { written: WrittenEvent; statements: Statement[] };

/** Writes events made ready, in one round trip on PostgreSQL. */
async function runEventWrites(tx: SqlScope, { written, statements }: EventWrites): Promise<WrittenEvent[]> {
  await sqlRunTogether(tx, statements);
  return written;
}

/** One event and its deliveries to `hooks`, made ready to write; leased to this process's worker when it has room. */
function eventWrites(
  tx: SqlScope,
  { type, projectId, dataJson, hooks, now, wake }: { type: DeliveredEventType; projectId: string; dataJson: string; hooks: readonly Subscriber[]; now: Date; wake: WebhookWake },
): ReadyEvent {
  const lease = wake.deliveryLease();
  const { event, deliveryIds, statements } = newEvent(tx, { type, projectId, dataJson, webhookIds: hooks.map((hook) => hook.id), now, lease });
  if (!lease) return { written: event, statements };
  const deliveries = hooks.map((hook, index): DueDelivery => ({
    id: deliveryIds[index]!, webhookId: hook.id, eventId: event.id, attempts: 0, type, eventAt: now, url: hook.url, sealedSecrets: hook.sealedSecrets, webhookFailing: hook.failing,
  }));
  return { written: { ...event, leased: { deliveries, until: lease.until } }, statements };
}

/**
 * Writes one event (its payload's JSON text given) and its deliveries to the given webhooks, due
 * now; leased to `lease`'s worker when given.
 */
export async function insertEvent(
  tx: SqlScope,
  options: { type: DeliveredEventType; projectId: string; dataJson: string; webhookIds: readonly string[]; now: Date; lease?: DeliveryLease | undefined },
): Promise<{ event: WrittenEvent; deliveryIds: string[] }> {
  const { event, deliveryIds, statements } = newEvent(tx, options);
  await sqlRunTogether(tx, statements);
  return { event, deliveryIds };
}

/** The inserts of one event and of its deliveries, with their ids. */
function newEvent(
  tx: SqlScope,
  { type, projectId, dataJson, webhookIds, now, lease }: { type: DeliveredEventType; projectId: string; dataJson: string; webhookIds: readonly string[]; now: Date; lease?: DeliveryLease | undefined },
): { event: WrittenEvent; deliveryIds: string[]; statements: Statement[] } {
  const eventId = newId();
  const at = sqlDate(tx, now);
  // The body is made once, as bytes: the payload within it goes to the database (PostgreSQL reads
  // a binary text parameter as its UTF-8; SQLite casts the blob to text), the whole to every delivery.
  const { body, data } = deliveryBody({ type, createdAt: now, dataJson });
  const stored = onPostgres(tx) ? sql`${data}` : sql`cast(${data} as text)`;
  const insertedEvent = sql`insert into webhook_events (id, project_id, type, data, created_at)
    values (${eventId}, ${projectId}, ${type}, ${stored}, ${at})`;
  const deliveryIds = webhookIds.map(() => newId());
  const leaseUntil = lease ? sqlDate(tx, lease.until) : null;
  const rows = webhookIds.map((webhookId, index) =>
    sql`(${sql.list([deliveryIds[index], webhookId, eventId, 'pending', 0, at, lease?.owner ?? null, leaseUntil, at, at])})`);
  const insertedDeliveries = sql`insert into webhook_deliveries (id, webhook_id, event_id, state, attempts, next_attempt_at, lease_owner, lease_expires_at, created_at, updated_at)
    values ${sql.join(rows, ', ')}`;
  return { event: { id: eventId, body, leased: null }, deliveryIds, statements: [insertedEvent, insertedDeliveries] };
}

/** Finished states of a progress record: an annotator's work on the item is over. */
const FINISHED = new Set(['completed', 'skipped']);

/**
 * `annotation_queue.completed` for each queue whose last unfinished item these progress writes
 * finished: the item became done with this write (its finishing annotators now number exactly its
 * quota), and no live item of the queue is left short of its quota.
 *
 * PostgreSQL: the check runs under a per-queue lock held to the commit, so that of two writes
 * finishing a queue's last two items at once, the one that checks second sees the other's commit
 * (under read committed, each sees only committed work): the event is written once, by it.
 * SQLite's transactions run one at a time.
 */
async function completions(tx: SqlScope, list: readonly WebhookAnnouncement[]): Promise<WebhookAnnouncement[]> {
  const finishing = new Map<string, ItemProgressData>();
  for (const event of list) {
    if (event.type === 'annotation_queue.item.progress' && FINISHED.has(event.data.annotation_state)) finishing.set(event.data.queue_id, event.data);
  }
  const completed: WebhookAnnouncement[] = [];
  for (const [queueId, progress] of finishing) {
    const [item] = await sqlRows<{ finishers: number | string; required: number }>(tx,
      sql`select (select count(*) from annotation_item_progress p where p.item_id = i.id and p.state in ('completed', 'skipped') and ${COUNTED_IN_QUEUE}) as finishers,
           ${REQUIRED_FROM_QUEUE} as required
         from annotation_queue_items i join annotation_queues q on q.id = i.queue_id
        where i.id = ${progress.item_id} and q.id = ${queueId} and q.deleted_at is null`);
    if (!item || Number(item.finishers) !== Number(item.required)) continue;
    if (onPostgres(tx)) await sqlRows(tx, sql`select pg_advisory_xact_lock(hashtextextended(${`webhook completion ${queueId}`}, 0))`);
    // Newest first: items are claimed in queue order, so the unfinished ones are mostly the newest.
    const [unfinished] = await sqlRows<{ id: string }>(tx,
      sql`select i.id from annotation_queue_items i join annotation_queues q on q.id = i.queue_id
         where i.queue_id = ${queueId} and i.deleted_at is null
           and (select count(*) from annotation_item_progress p where p.item_id = i.id and p.state in ('completed', 'skipped') and ${COUNTED_IN_QUEUE}) < ${REQUIRED_FROM_QUEUE}
         order by i.created_at desc, i.id desc limit 1`);
    if (unfinished) continue;
    const [total] = await sqlRows<{ n: number | string }>(tx,
      sql`select count(*) as n from annotation_queue_items where queue_id = ${queueId} and deleted_at is null`);
    completed.push({ type: 'annotation_queue.completed', data: { project_id: progress.project_id, queue_id: queueId, total_items: Number(total?.n ?? 0) } });
  }
  return completed;
}

/** A feedback record a request created, as the feedback store holds it. */
export type CreatedFeedback = {
  projectId: string;
  id: string;
  queueId: string | null;
  element: { feedback_type: string; svc_ref: string; call_ref?: string | null | undefined };
};

/**
 * Writes `feedback.created` events of newly stored records, in the caller's transaction (see
 * feedbackCreatedWrites).
 */
export async function writeFeedbackCreated(
  tx: SqlScope,
  options: { created: readonly CreatedFeedback[]; userId: string; wake: WebhookWake },
): Promise<WrittenEvent[]> {
  return runEventWrites(tx, await feedbackCreatedWrites(tx, options));
}

/**
 * The `feedback.created` events of these new records, made ready to write in the caller's
 * transaction (a write that knows its records are new before it stores them writes the events
 * with them, in the same statement): per project that a live, enabled webhook subscribes to it
 * from, events of at most 1,000 records. A payload is built only then, and turned into its bytes
 * at once: at batch 1,000 its records never outlive the statement that writes them.
 */
export async function feedbackCreatedWrites(
  tx: SqlScope,
  { created, userId, wake }: { created: readonly CreatedFeedback[]; userId: string; wake: WebhookWake },
): Promise<EventWrites> {
  const events: ReadyEvent[] = [];
  const now = new Date();
  for (const [projectId, records] of Map.groupBy(created, (record) => record.projectId)) {
    const hooks = subscribedTo(await subscribersOf(tx, { projectId, now }), 'feedback.created');
    if (!hooks.length) continue;
    for (let i = 0; i < records.length; i += FEEDBACK_CREATED_MAX_RECORDS) {
      const feedback: FeedbackCreatedData['feedback'] = records.slice(i, i + FEEDBACK_CREATED_MAX_RECORDS).map((p) => ({
        id: p.id, feedback_type: p.element.feedback_type, svc_ref: p.element.svc_ref, call_ref: p.element.call_ref ?? null, queue_id: p.queueId, svc_user_id: userId,
      }));
      const data: FeedbackCreatedData = { project_id: projectId, feedback };
      events.push(eventWrites(tx, { type: 'feedback.created', projectId, dataJson: JSON.stringify(data), hooks, now, wake }));
    }
  }
  return collect(events);
}

/** Events made ready, as one set of writes. */
function collect(events: readonly ReadyEvent[]): EventWrites {
  return { written: events.map((event) => event.written), statements: events.flatMap((event) => event.statements) };
}
