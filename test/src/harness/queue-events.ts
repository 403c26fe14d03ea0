import type { LoupeClient } from '@loupe/client';
import type { AnnotationQueueEvent } from '@loupe/shared';
import { TRPCClientError } from '@trpc/client';

/** A subscription to live events through the typed client, recording what it gets. */
export type EventRecorder = {
  events: AnnotationQueueEvent[];
  /** The error that ended the subscription, if one did. */
  error: () => TRPCClientError<any> | undefined;
  /** Resolves when the server has the subscription in place (tRPC's "started"); rejects on an error first. */
  started: Promise<void>;
  /** Waits for the first event after `from` (an index in `events`) that matches, at most `ms`. */
  next(match: (event: AnnotationQueueEvent) => boolean, from: number, ms?: number): Promise<{ event: AnnotationQueueEvent; waitedMs: number }>;
  /** Waits until the subscription fails, at most `ms`. */
  failure(ms?: number): Promise<TRPCClientError<any>>;
  stop(): void;
};

/**
 * Records the events of one queue (annotationQueues.events) when `input` names a queue, else of
 * every queue of the project (annotationQueues.projectEvents).
 */
export function recordEvents(client: LoupeClient, input: { project_id: string; queue_id?: string }, onEachStart?: () => void): EventRecorder {
  const events: AnnotationQueueEvent[] = [];
  let failed: TRPCClientError<any> | undefined;
  let onStarted!: () => void;
  let onFailed!: (error: unknown) => void;
  const started = new Promise<void>((resolve, reject) => {
    onStarted = resolve;
    onFailed = reject;
  });
  started.catch(() => undefined);
  const handlers = {
    onStarted: () => {
      onEachStart?.();
      onStarted();
    },
    onData: (event: AnnotationQueueEvent) => void events.push(event),
    onError: (error: unknown) => {
      failed = error instanceof TRPCClientError ? error : new TRPCClientError(String(error));
      onFailed(failed);
    },
  };
  const { queue_id: queueId, project_id: projectId } = input;
  const subscription =
    queueId === undefined
      ? client.annotationQueues.projectEvents.subscribe({ project_id: projectId }, handlers)
      : client.annotationQueues.events.subscribe({ project_id: projectId, queue_id: queueId }, handlers);
  const poll = async <T>(find: () => T | undefined, ms: number, what: string): Promise<T> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no ${what} within ${ms} ms; events so far: ${JSON.stringify(events)}; error: ${failed?.message}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return {
    events,
    error: () => failed,
    started,
    async next(match, from, ms = 2_000) {
      const begun = Date.now();
      const event = await poll(() => events.slice(from).find(match), ms, 'matching event');
      return { event, waitedMs: Date.now() - begun };
    },
    failure: (ms = 2_000) => poll(() => failed, ms, 'error'),
    stop: () => subscription.unsubscribe(),
  };
}

/** Waits until `read()` equals `value` (a count the server keeps), at most `ms`. */
export async function eventually<T>(read: () => T, value: T, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (read() !== value) {
    if (Date.now() > deadline) throw new Error(`expected ${String(value)}, still ${String(read())} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
