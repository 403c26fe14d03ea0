import type { LoupeClient } from '@loupe/client';
import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { renewQueries } from '../live/renew-queries.ts';
import { useProjectEvents } from '../live/useProjectEvents.ts';
import { useQueueEvents } from '../live/useQueueEvents.ts';
import type { Topic } from './my-queues.ts';

/** Holds one live stream (a project's or a queue's) and renews the query under `queryKey` at each of its events. */
export function FollowTopic({ client, topic, queryKey }: { client: LoupeClient; topic: Topic; queryKey: QueryKey }) {
  return topic.queueId ? (
    <FollowQueue client={client} projectId={topic.projectId} queueId={topic.queueId} queryKey={queryKey} />
  ) : (
    <FollowProject client={client} projectId={topic.projectId} queryKey={queryKey} />
  );
}

function FollowProject({ client, projectId, queryKey }: { client: LoupeClient; projectId: string; queryKey: QueryKey }) {
  const queryClient = useQueryClient();
  const renew = () => void renewQueries(queryClient, queryKey);
  useProjectEvents(client, projectId, { onQueueChanged: renew, onReconnect: renew });
  return null;
}

function FollowQueue({ client, projectId, queueId, queryKey }: { client: LoupeClient; projectId: string; queueId: string; queryKey: QueryKey }) {
  useQueueEvents(client, projectId, queueId, [queryKey]);
  return null;
}
