import type { LoupeClient } from '@loupe/client';
import type { CallFilter } from '@loupe/shared';

/** Calls read per page while collecting the matching ones; also the ids of one add (the API takes up to 10,000). */
export const MATCHING_PAGE_SIZE = 1000;
/** Ids of duplicates and missing calls kept for the answer's lists; the counts are whole. */
const LISTED_IDS = 1000;

export type MatchingProgress = { found: number; added: number; duplicates: number; missing: number; done: boolean };
export type MatchingAnswer = MatchingProgress & { duplicateIds: string[]; missingIds: string[] };

/**
 * Adds every call the filter matches to a queue: pages through calls/query by cursor and adds each
 * page's ids as they come (adding changes no call, so the pages stay the same). The counts are the
 * sums of the add answers; `onProgress` hears them after each page; `signal` stops between pages.
 */
export async function addMatchingCalls(
  client: LoupeClient,
  { projectId, queueId, filter, signal, onProgress }: { projectId: string; queueId: string; filter: CallFilter; signal?: AbortSignal; onProgress: (progress: MatchingProgress) => void },
): Promise<MatchingAnswer> {
  const answer: MatchingAnswer = { found: 0, added: 0, duplicates: 0, missing: 0, done: false, duplicateIds: [], missingIds: [] };
  let cursor: string | null = null;
  do {
    signal?.throwIfAborted();
    const page = await client.calls.query.query({ project_id: projectId, filter, limit: MATCHING_PAGE_SIZE, ...(cursor ? { cursor } : {}) });
    cursor = page.next_cursor;
    if (page.calls.length) {
      const added = await client.annotationQueues.items.add.mutate({ project_id: projectId, queue_id: queueId, call_ids: page.calls.map((call) => call.id) });
      answer.found += page.calls.length;
      answer.added += added.added_count;
      answer.duplicates += added.duplicates.length;
      answer.missing += added.missing_call_ids.length;
      answer.duplicateIds.push(...added.duplicates.slice(0, LISTED_IDS - answer.duplicateIds.length));
      answer.missingIds.push(...added.missing_call_ids.slice(0, LISTED_IDS - answer.missingIds.length));
    }
    onProgress({ ...answer, done: cursor === null });
  } while (cursor !== null);
  answer.done = true;
  return answer;
}
