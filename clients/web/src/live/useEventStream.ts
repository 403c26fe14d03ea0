import type { LoupeClient } from '@loupe/client';
import type { AnnotationQueueEvent } from '@loupe/shared';
import { useEffect, useRef, useState } from 'react';
import { statusOf } from '../api.ts';

/** Whether the page follows its queues live: connecting, live, or not (it shows what it last read). */
export type LiveState = 'connecting' | 'live' | 'offline';

/**
 * After the server refused the stream for now (429: too many open streams; 5xx; unreachable), try
 * again this much later. A refusal that will not change (401, 403, 404: the queue is gone) is final.
 */
const RETRY_AFTER_REFUSAL_MS = 15_000;
const RETRY_AFTER_COMPLETE_MS = 1_000;

/** What a stream follows: one queue of the project (annotationQueues.events), or all of them (.projectEvents). */
export type StreamTopic = { client: LoupeClient; projectId: string; queueId?: string };

export type StreamHandlers = {
  onEvent(event: AnnotationQueueEvent): void;
  /** The stream started again after a break: events of the gap were not sent, so read everything again. */
  onReconnect(): void;
};

/**
 * Holds one live event stream open for as long as the page shows it: reconnects after a renewal
 * or a refusal for now, and says whether the page is live. The handlers are read at each call;
 * the stream follows the client, project and queue. The hooks that use it (useQueueEvents,
 * useProjectEvents) say what an event changes.
 */
export function useEventStream({ client, projectId, queueId }: StreamTopic, handlers: StreamHandlers, enabled = true): LiveState {
  const latest = useRef(handlers);
  useEffect(() => {
    latest.current = handlers;
  });
  const [state, setState] = useState<LiveState>('connecting');

  useEffect(() => {
    if (!enabled) return;
    let startedBefore = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let subscription: { unsubscribe(): void } | undefined;
    let closed = false;
    const subscribe = () => {
      if (closed) return;
      setState('connecting');
      const callbacks = {
        onStarted: () => {
          setState('live');
          if (startedBefore) latest.current.onReconnect();
          startedBefore = true;
        },
        onData: (event: AnnotationQueueEvent) => latest.current.onEvent(event),
        onConnectionStateChange: (connection: { state: string; error: unknown }) => {
          if (connection.state === 'connecting' && connection.error) setState('connecting');
        },
        onError: (error: unknown) => {
          if (closed) return;
          setState('offline');
          const status = statusOf(error);
          if (status === 0 || status === 429 || status >= 500) retry = setTimeout(subscribe, RETRY_AFTER_REFUSAL_MS);
        },
        // The server ended the stream for good (it renews streams with an error the client
        // answers itself): open a new one.
        onComplete: () => {
          if (closed) return;
          setState('connecting');
          retry = setTimeout(subscribe, RETRY_AFTER_COMPLETE_MS);
        },
      };
      subscription =
        queueId === undefined
          ? client.annotationQueues.projectEvents.subscribe({ project_id: projectId }, callbacks)
          : client.annotationQueues.events.subscribe({ project_id: projectId, queue_id: queueId }, callbacks);
    };
    subscribe();
    return () => {
      closed = true;
      subscription?.unsubscribe();
      clearTimeout(retry);
    };
  }, [client, projectId, queueId, enabled]);

  return enabled ? state : 'offline';
}
