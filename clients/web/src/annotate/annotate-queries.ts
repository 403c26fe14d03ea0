import type { LoupeClient, RouterOutputs } from '@loupe/client';
import { queryOptions, type QueryClient } from '@tanstack/react-query';

// What the annotate page reads. Keys sit under ['session', <id>] like every signed-in query, so
// signing out drops them.

export type Queue = RouterOutputs['annotationQueues']['read']['queue'];
export type QueueItem = NonNullable<RouterOutputs['annotationQueues']['items']['claim']['item']>;
export type QueueStats = RouterOutputs['annotationQueues']['stats']['stats'][number];
export type Spec = RouterOutputs['annotationSpecs']['query']['specs'][number];
export type Call = RouterOutputs['calls']['read']['call'];

export const queueQuery = (client: LoupeClient, session: number, projectId: string, queueId: string) =>
  queryOptions({
    queryKey: ['session', session, 'queue', projectId, queueId],
    queryFn: async () => (await client.annotationQueues.read.query({ project_id: projectId, queue_id: queueId })).queue,
  });

/** The key under which the stats of every queue of the project sit (to invalidate them all). */
export const projectStatsKey = (session: number, projectId: string) => ['session', session, 'queue-stats', projectId] as const;

/** The queue's done/total; live updates invalidate this key. */
export const queueStatsQuery = (client: LoupeClient, session: number, projectId: string, queueId: string) =>
  queryOptions({
    queryKey: [...projectStatsKey(session, projectId), queueId],
    queryFn: async () => (await client.annotationQueues.stats.query({ project_id: projectId, queue_ids: [queueId] })).stats[0]!,
  });

/** The rubric: the queue's scorer specs, in the queue's order. */
export const rubricQuery = (client: LoupeClient, session: number, projectId: string, refs: string[]) =>
  queryOptions({
    queryKey: ['session', session, 'specs', projectId, refs],
    queryFn: async (): Promise<Spec[]> => {
      if (!refs.length) return [];
      const { specs } = await client.annotationSpecs.query.query({ project_id: projectId, refs });
      const byRef = new Map(specs.map((spec) => [spec.ref, spec]));
      return refs.flatMap((ref) => byRef.get(ref) ?? []);
    },
    staleTime: Infinity, // a ref names fixed content
  });

const callKey = (session: number, projectId: string, callId: string) => ['session', session, 'call', projectId, callId] as const;

/** A call never changes once stored: read once, kept for the session. */
export const callQuery = (client: LoupeClient, session: number, projectId: string, callId: string) =>
  queryOptions({
    queryKey: callKey(session, projectId, callId),
    queryFn: async () => (await client.calls.read.query({ project_id: projectId, call_id: callId })).call,
    staleTime: Infinity,
  });

/** How many of the items after the current one have their calls read ahead. */
const READ_AHEAD = 3;

/**
 * Reads ahead the calls of the items a claim is likely to hand out next: the queue's first
 * unstarted items in queue order (claim's order), other than those named. One items query and one
 * calls query; the calls land in the cache under the key `callQuery` reads, so the next item's
 * call is shown the moment its claim answers.
 */
export async function readAhead(client: LoupeClient, queryClient: QueryClient, session: number, projectId: string, queueId: string, skip: Set<string>): Promise<void> {
  const { items } = await client.annotationQueues.items.query.query({
    project_id: projectId,
    queue_id: queueId,
    filter: { annotation_states: ['unstarted'] },
    limit: READ_AHEAD + skip.size,
  });
  const callIds = items
    .filter((item) => !skip.has(item.id))
    .slice(0, READ_AHEAD)
    .map((item) => item.call_id)
    .filter((callId) => queryClient.getQueryData(callKey(session, projectId, callId)) === undefined);
  if (!callIds.length) return;
  const { calls } = await client.calls.query.query({ project_id: projectId, filter: { call_ids: callIds }, limit: callIds.length });
  for (const call of calls) queryClient.setQueryData(callKey(session, projectId, call.id), call);
}
