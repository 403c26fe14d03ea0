import type { LoupeClient, RouterInputs, RouterOutputs } from '@loupe/client';
import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import { callRef } from '../annotate/feedback-records.ts';
import type { QueueItem } from '../annotate/annotate-queries.ts';

// What the queue page reads beyond the queue, its stats and its rubric (annotate-queries.ts). Keys
// sit under ['session', <id>] like every signed-in query, so signing out drops them.

export type FeedbackRecord = RouterOutputs['feedback']['query']['result'][number];
/** How many of its required annotations an item has ("1 of 2"). */
export type ItemAnnotations = RouterOutputs['annotationQueues']['items']['annotations']['items'][number];
type FeedbackFilter = NonNullable<RouterInputs['feedback']['query']['filter']>;
export type ItemSort = NonNullable<RouterInputs['annotationQueues']['items']['query']['sort_by']>[number];
export type ItemState = QueueItem['annotation_state'];

/** Items per page of the list (and per "Load more"). */
export const ITEMS_PAGE_SIZE = 50;
/** Feedback records per feedback query page: a page of items rarely has more. */
const FEEDBACK_PAGE_SIZE = 1000;

/** A page of items, every feedback record of the queue about their calls, and the items' annotation counts. */
export type ItemsPage = { items: QueueItem[]; records: FeedbackRecord[]; annotations: ItemAnnotations[]; nextCursor: string | null };

/** The key prefix of every items list of a queue, whatever its filter and order: live events invalidate it. */
export const queueItemsKey = (session: number, projectId: string, queueId: string) => ['session', session, 'queue-items', projectId, queueId] as const;

/**
 * The queue's items, a page at a time by cursor (contract 5.6), each page with the feedback about
 * its items and how many annotations each has, so that a refetch renews them together.
 */
export const queueItemsQuery = (
  client: LoupeClient,
  session: number,
  projectId: string,
  queueId: string,
  view: { states: ItemState[]; sort: ItemSort },
) =>
  infiniteQueryOptions({
    queryKey: [...queueItemsKey(session, projectId, queueId), view],
    initialPageParam: null as string | null,
    queryFn: async ({ pageParam }): Promise<ItemsPage> => {
      const { items, next_cursor } = await client.annotationQueues.items.query.query({
        project_id: projectId,
        queue_id: queueId,
        limit: ITEMS_PAGE_SIZE,
        sort_by: [view.sort],
        include_position: true,
        ...(view.states.length ? { filter: { annotation_states: view.states } } : {}),
        ...(pageParam ? { cursor: pageParam } : {}),
      });
      const [records, annotations] = await Promise.all([
        queueFeedback(client, projectId, queueId, items.map((item) => item.call_id)),
        items.length
          ? client.annotationQueues.items.annotations.query({ project_id: projectId, queue_id: queueId, item_ids: items.map((item) => item.id) }).then((answer) => answer.items)
          : [],
      ]);
      return { items, records, annotations, nextCursor: next_cursor };
    },
    getNextPageParam: (page) => page.nextCursor,
  });

/** The queue's item of a call (its display fields), or null when the call is not in the queue. */
export const queueItemOfCallQuery = (client: LoupeClient, session: number, projectId: string, queueId: string, callId: string) =>
  queryOptions({
    queryKey: [...queueItemsKey(session, projectId, queueId), 'item', callId],
    queryFn: async () =>
      (await client.annotationQueues.items.query.query({ project_id: projectId, queue_id: queueId, filter: { call_ids: [callId] }, limit: 1 })).items[0] ?? null,
  });

/**
 * One item's feedback in the queue, for an item opened on its own: the records naming its call in
 * svc_ref or in call_ref (agreement counts both), each once.
 */
export const itemFeedbackQuery = (client: LoupeClient, session: number, projectId: string, queueId: string, callId: string) =>
  queryOptions({
    queryKey: [...queueItemsKey(session, projectId, queueId), 'feedback', callId],
    queryFn: async () => {
      const [bySvcRef, byCallRef] = await Promise.all([
        queueFeedback(client, projectId, queueId, [callId]),
        allPages(client, projectId, { queue_id: queueId, call_ref: callRef(projectId, callId) }),
      ]);
      const seen = new Set(bySvcRef.map((record) => record.id));
      return [...bySvcRef, ...byCallRef.filter((record) => !seen.has(record.id))];
    },
  });

/**
 * Every feedback record of the queue about the given calls (svc_ref naming the call, as the web
 * app and the SDKs write it).
 */
function queueFeedback(client: LoupeClient, projectId: string, queueId: string, callIds: string[]): Promise<FeedbackRecord[]> {
  if (!callIds.length) return Promise.resolve([]);
  return allPages(client, projectId, { queue_id: queueId, svc_refs: callIds.map((callId) => callRef(projectId, callId)) });
}

/** The records a feedback filter matches, following next_cursor to the end. */
async function allPages(client: LoupeClient, projectId: string, filter: FeedbackFilter): Promise<FeedbackRecord[]> {
  const records: FeedbackRecord[] = [];
  let cursor: string | null = null;
  do {
    const page: { result: FeedbackRecord[]; next_cursor: string | null } = await client.feedback.query.query({
      project_id: projectId,
      filter,
      limit: FEEDBACK_PAGE_SIZE,
      ...(cursor ? { cursor } : {}),
    });
    records.push(...page.result);
    cursor = page.next_cursor;
  } while (cursor);
  return records;
}
