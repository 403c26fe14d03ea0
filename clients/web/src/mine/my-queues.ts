import type { LoupeClient, RouterOutputs } from '@loupe/client';
import { queryOptions } from '@tanstack/react-query';
import { canWrite, roleIn } from '../access.ts';
import type { Me } from '../api.ts';

export type MyQueue = RouterOutputs['annotationQueues']['mine']['queues'][number];

/**
 * Live streams the page holds at most: well below the server's default per-key limit (20), with
 * room for the caller's other tabs. Beyond it (and for queues that become open to an annotator,
 * whose streams it cannot know of) the list is read again every REFRESH_MS.
 */
export const MAX_STREAMS = 8;
export const REFRESH_MS = 30_000;

/** Every queue the caller may claim from, with what is left for them (contract 5.11). */
export const myQueuesQuery = (client: LoupeClient, session: number) =>
  queryOptions({
    queryKey: ['session', session, 'my-queues'],
    queryFn: async () => (await client.annotationQueues.mine.query({})).queues,
    refetchInterval: REFRESH_MS,
  });

/** What the page follows live: a project's one stream, or one queue's stream. */
export type Topic = { projectId: string; queueId?: string };

/**
 * The streams that keep the list current: one per project where the caller reads the whole project
 * (members and admins: its stream also tells of queues created or opened there), one per queue
 * where they are an annotator (a project's stream is not open to annotators); at most MAX_STREAMS.
 */
export function topicsOf(me: Me | undefined, queues: readonly MyQueue[]): Topic[] {
  const topics: Topic[] = [];
  const seen = new Set<string>();
  for (const { project_id: projectId, queue } of queues) {
    const whole = canWrite(roleIn(me, projectId));
    const key = whole ? projectId : `${projectId}\u0000${queue.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    topics.push(whole ? { projectId } : { projectId, queueId: queue.id });
  }
  return topics.slice(0, MAX_STREAMS);
}
