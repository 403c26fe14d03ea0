import { setTimeout as sleep } from 'node:timers/promises';
import type { SqlScope } from '../db/sql.ts';
import type { Access } from '../domain/access.ts';
import { liveQueue } from '../domain/annotation-queues.ts';
import { QueueEventStream } from './event-stream.ts';
import type { QueueEventBus } from './queue-event-bus.ts';
import type { StreamSlots } from './stream-slots.ts';

/** What a stream follows: one queue of the project (contract 5.8), or every queue of it. */
export type StreamRequest = { project_id: string; queue_id?: string };

/** A stream to open: for whose key (a caller who may read the project), of what, on which bus, with which limits. */
export type StreamOpening = {
  keyId: string;
  /** What the stream's procedure allows: checked again periodically (stream-access-check.ts). */
  access: Access;
  req: StreamRequest;
  bus: QueueEventBus;
  slots: StreamSlots;
  signal: AbortSignal | undefined;
  readyWaitMs: number;
  maxLifeMs: number;
};

/**
 * Opens a stream of one queue's events (contract 5.8), or of every queue of a project, for a
 * caller who may read them (checked by the procedure): 404 as for reading the queue, 429 over the
 * stream limits, where either kind of stream counts once. The subscriber is in place when this
 * resolves, so the stream's first message (tRPC's "connected") means no later write is missed.
 * Ends, giving back its slot and subscription, when `signal` aborts (the client went away), and
 * asks its client to reconnect after `maxLifeMs`.
 */
export async function openEventStream(
  db: SqlScope,
  { keyId, access, req, bus, slots, signal, readyWaitMs, maxLifeMs }: StreamOpening,
): Promise<QueueEventStream> {
  if (req.queue_id !== undefined) await liveQueue(db, req.project_id, req.queue_id);
  const giveBack = slots.take(keyId, { keyId, projectId: req.project_id, access, fail: (error) => stream.fail(error) });
  let unsubscribe = () => {};
  const onAbort = () => stream.end();
  // A stream outlives the check of its credentials: it is renewed (the client reconnects and is
  // authenticated again). A revoked key or a lost membership ends it sooner, at the periodic check
  // of every open stream's access (events/stream-access-check.ts).
  const expiry = setTimeout(() => stream.end('expired'), maxLifeMs);
  const stream = new QueueEventStream(() => {
    clearTimeout(expiry);
    unsubscribe();
    giveBack();
    signal?.removeEventListener('abort', onAbort);
  });
  unsubscribe = bus.subscribe(req.queue_id !== undefined ? { queue_id: req.queue_id } : { project_id: req.project_id }, stream);
  if (signal?.aborted) stream.end();
  else signal?.addEventListener('abort', onAbort, { once: true });
  // While the LISTEN connection is being reopened, the stream starts anyway: it is told of the
  // gap once the connection is back (events of the gap were missed).
  const wait = new AbortController();
  await Promise.race([bus.ready(), sleep(readyWaitMs, undefined, { signal: wait.signal }).catch(() => undefined)]);
  wait.abort();
  return stream;
}
