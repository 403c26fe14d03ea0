import type { LoupeClient, RouterOutputs } from '@loupe/client';
import { queryOptions } from '@tanstack/react-query';

export type TraceCallData = RouterOutputs['calls']['query']['calls'][number];
/** A trace's calls in start order, and whether they are all of them. */
export type Trace = { calls: TraceCallData[]; complete: boolean };

/** Calls of one trace read at most: a larger trace shows its first this many (by start) and says so. */
export const TRACE_CALLS_LIMIT = 500;
/**
 * Pages read at most. The server cuts a page at its byte budget, so a trace of very large calls
 * takes more pages than TRACE_CALLS_LIMIT / limit; this keeps the requests of one trace bounded.
 */
const TRACE_PAGES = 20;

/**
 * The calls of a trace (calls/query with `trace_ids`, paged by cursor), at most TRACE_CALLS_LIMIT.
 * Spans of a trace may still be arriving, so it is read again after a minute, not kept forever.
 */
export const traceQuery = (client: LoupeClient, session: number, projectId: string, traceId: string) =>
  queryOptions({
    queryKey: ['session', session, 'trace', projectId, traceId],
    queryFn: async ({ signal }): Promise<Trace> => {
      const calls: TraceCallData[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < TRACE_PAGES; pages++) {
        const page: RouterOutputs['calls']['query'] = await client.calls.query.query(
          // One more than shown: whether the trace holds more is then known without another page.
          { project_id: projectId, filter: { trace_ids: [traceId] }, limit: TRACE_CALLS_LIMIT + 1 - calls.length, ...(cursor ? { cursor } : {}) },
          { signal },
        );
        calls.push(...page.calls);
        cursor = page.next_cursor;
        if (calls.length > TRACE_CALLS_LIMIT) break;
        if (cursor === null) return { calls, complete: true };
      }
      return { calls: calls.slice(0, TRACE_CALLS_LIMIT), complete: false };
    },
    staleTime: 60_000,
  });
