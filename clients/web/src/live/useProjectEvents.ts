import type { LoupeClient } from '@loupe/client';
import { useEffect, useRef, useState } from 'react';
import { usePacedRuns } from './paced-runs.ts';
import { useEventStream, type LiveState } from './useEventStream.ts';

export type ProjectEventHandlers = {
  /**
   * A queue of the project changed: its counts or items, and when `updated`, the queue itself
   * (created, edited or deleted: a `queue_updated` was among its events). Called at most every
   * REFETCH_INTERVAL_MS per queue.
   */
  onQueueChanged(queueId: string, updated: boolean): void;
  /** The stream started again after a break: every queue may have changed. */
  onReconnect(): void;
};

/**
 * Follows every queue of a project on one live event stream (annotationQueues.projectEvents), so
 * a page showing many queues holds one stream, however many queues it shows. The handlers are
 * read at each event. Returns whether the page is live.
 */
export function useProjectEvents(client: LoupeClient, projectId: string, handlers: ProjectEventHandlers, { enabled = true }: { enabled?: boolean } = {}): LiveState {
  const latest = useRef(handlers);
  useEffect(() => {
    latest.current = handlers;
  });
  const paced = usePacedRuns();
  // Queues with a queue_updated not yet handed on: a paced run runs once for several events.
  const [updatedDue] = useState(() => new Set<string>());
  return useEventStream(
    { client, projectId },
    {
      onEvent: ({ type, queue_id: queueId }) => {
        if (type === 'queue_updated') updatedDue.add(queueId);
        paced.run(queueId, () => latest.current.onQueueChanged(queueId, updatedDue.delete(queueId)));
      },
      onReconnect: () => {
        updatedDue.clear();
        latest.current.onReconnect();
      },
    },
    enabled,
  );
}
