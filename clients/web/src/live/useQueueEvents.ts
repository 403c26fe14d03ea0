import type { LoupeClient } from '@loupe/client';
import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { usePacedRuns } from './paced-runs.ts';
import { renewQueries } from './renew-queries.ts';
import { useEventStream, type LiveState } from './useEventStream.ts';

export type { LiveState };

/**
 * Follows one queue's live events (annotationQueues.events) and invalidates the given TanStack
 * queries when the queue changes, so what the page shows follows other annotators' work. Events
 * carry only ids: the queries refetch what they show. After a reconnect the queries are refetched
 * too, as events may have been missed meanwhile.
 *
 * `queryKeys` is read at each event; the subscription follows the client, project and queue.
 * `onQueueUpdated` runs at each `queue_updated` event (a change of the queue's settings, or its
 * deletion).
 * Returns whether the page is live, for a hint beside what it shows. For example:
 *
 *   const live = useQueueEvents(client, projectId, queueId, [queueStatsQuery(client, session, projectId, queueId).queryKey]);
 */
export function useQueueEvents(
  client: LoupeClient,
  projectId: string,
  queueId: string,
  queryKeys: readonly QueryKey[],
  { enabled = true, onQueueUpdated }: { enabled?: boolean; onQueueUpdated?: () => void } = {},
): LiveState {
  const queryClient = useQueryClient();
  const paced = usePacedRuns();
  const refetch = () => {
    for (const queryKey of queryKeys) void renewQueries(queryClient, queryKey);
  };
  return useEventStream(
    { client, projectId, queueId },
    {
      onEvent: (event) => {
        // The queue itself changed (renamed, resized, or deleted): a page that holds its settings reads it again.
        if (event.type === 'queue_updated') onQueueUpdated?.();
        paced.run(queueId, refetch);
      },
      onReconnect: () => paced.run(queueId, refetch),
    },
    enabled,
  );
}
