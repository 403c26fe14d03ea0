import type { LoupeClient, RouterInputs, RouterOutputs } from '@loupe/client';
import type { CallFilter } from '@loupe/shared';
import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';

// What the project page reads. Keys sit under ['session', <id>] like every signed-in query, so
// signing out drops them; a queue's stats share their key with the annotate page's.

export type ProjectQueue = RouterOutputs['annotationQueues']['query']['queues'][number];
export type ProjectSpec = RouterOutputs['annotationSpecs']['query']['specs'][number];
export type ProjectCall = RouterOutputs['calls']['query']['calls'][number];
export type QueueFields = Omit<RouterInputs['annotationQueues']['create'], 'project_id'>;
export type AddAnswer = RouterOutputs['annotationQueues']['items']['add'];

/** Queues listed at once; a project with more shows the newest this many. */
export const QUEUE_LIST_LIMIT = 500;
/** Calls per page of the call browser. */
export const CALLS_PAGE_SIZE = 50;

export const projectQueuesQuery = (client: LoupeClient, session: number, projectId: string) =>
  queryOptions({
    queryKey: ['session', session, 'project-queues', projectId],
    queryFn: async () => (await client.annotationQueues.query.query({ project_id: projectId, limit: QUEUE_LIST_LIMIT })).queues,
  });

/** Every annotation spec of the project (each version), by name. */
export const projectSpecsQuery = (client: LoupeClient, session: number, projectId: string) =>
  queryOptions({
    queryKey: ['session', session, 'project-specs', projectId],
    queryFn: async () => (await client.annotationSpecs.query.query({ project_id: projectId })).specs,
  });

/** The project's calls, page by page (contract 5.6), narrowed by a CallFilter (5.1). */
export const projectCallsQuery = (client: LoupeClient, session: number, projectId: string, filter: CallFilter) =>
  infiniteQueryOptions({
    queryKey: ['session', session, 'project-calls', projectId, filter],
    queryFn: ({ pageParam }) =>
      client.calls.query.query({
        project_id: projectId,
        limit: CALLS_PAGE_SIZE,
        filter,
        ...(pageParam ? { cursor: pageParam } : {}),
      }),
    initialPageParam: null as string | null,
    getNextPageParam: (page) => page.next_cursor,
  });

export type ProjectMember = RouterOutputs['projects']['members']['members'][number];

/** The members of the project's entity with their roles (the people a queue may be assigned to are among them). */
export const projectMembersQuery = (client: LoupeClient, session: number, projectId: string) =>
  queryOptions({
    queryKey: ['session', session, 'project-members', projectId],
    queryFn: async () => (await client.projects.members.query({ project_id: projectId })).members,
  });
