import type { LoupeClient } from '@loupe/client';
import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { statusOf } from '../api.ts';

/** Whether the page follows the queue live: connecting, live, or not (it shows what it last read). */
export type LiveState = 'connecting' | 'live' | 'offline';

/**
 * Refetches are at most this often: a burst of events (annotators finishing items, a large add)
 * costs one refetch at its start and one at its end, while a single event is shown at once.
 */
export const REFETCH_INTERVAL_MS = 500;
/**
 * After the server refused the stream for now (429: too many open streams; 5xx; unreachable), try
 * again this much later. A refusal that will not change (401, 403, 404: the queue is gone) is final.
 */
const RETRY_AFTER_REFUSAL_MS = 15_000;
const RETRY_AFTER_COMPLETE_MS = 1_000;

/**
 * Follows one queue's live events (annotationQueues.events) and invalidates the given TanStack
 * queries when the queue changes, so what the page shows follows other annotators' work. Events
 * carry only ids: the queries refetch what they show. After a reconnect the queries are refetched
 * too, as events may have been missed meanwhile.
 *
 * `queryKeys` is read at each event; the subscription follows the client, project and queue.
 * Returns whether the page is live, for a hint beside what it shows. For example:
 *
 *   const live = useQueueEvents(client, projectId, queueId, [queueStatsQuery(client, session, projectId, queueId).queryKey]);
 */
export function useQueueEvents(
  client: LoupeClient,
  projectId: string,
  queueId: string,
  queryKeys: readonly QueryKey[],
  { enabled = true }: { enabled?: boolean } = {},
): LiveState {
  const queryClient = useQueryClient();
  const keys = useRef(queryKeys);
  useEffect(() => {
    keys.current = queryKeys;
  });
  const [state, setState] = useState<LiveState>('connecting');

  useEffect(() => {
    if (!enabled) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let due = false;
    const refetch = () => {
      for (const queryKey of keys.current) void queryClient.invalidateQueries({ queryKey });
    };
    // Leading and trailing: the first change shows at once, the rest of a burst once it settles.
    const changed = () => {
      if (timer) {
        due = true;
        return;
      }
      refetch();
      const tick = () => {
        if (due) {
          due = false;
          refetch();
          timer = setTimeout(tick, REFETCH_INTERVAL_MS);
        } else {
          timer = undefined;
        }
      };
      timer = setTimeout(tick, REFETCH_INTERVAL_MS);
    };

    let startedBefore = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let subscription: { unsubscribe(): void } | undefined;
    let closed = false;
    const subscribe = () => {
      if (closed) return;
      setState('connecting');
      subscription = client.annotationQueues.events.subscribe(
        { project_id: projectId, queue_id: queueId },
        {
          onStarted: () => {
            setState('live');
            if (startedBefore) changed();
            startedBefore = true;
          },
          onData: () => changed(),
          onConnectionStateChange: (connection) => {
            if (connection.state === 'connecting' && connection.error) setState('connecting');
          },
          onError: (error) => {
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
        },
      );
    };
    subscribe();
    return () => {
      closed = true;
      subscription?.unsubscribe();
      clearTimeout(retry);
      clearTimeout(timer);
    };
  }, [client, queryClient, projectId, queueId, enabled]);

  return enabled ? state : 'offline';
}
