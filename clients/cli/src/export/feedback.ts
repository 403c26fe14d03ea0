import type { LoupeClient } from '@loupe/client';
import { encoder, pagedBy, pages, type ExportFormat, type Retry } from '@loupe/client/export';
import type { CursorHints } from '../cursor-hints.ts';
import type { Progress } from '../output.ts';
import type { ByteSink } from './writer.ts';

/** The columns of a feedback export, in the order of a stored Feedback record. */
export const FEEDBACK_COLUMNS = [
  'id', 'project_id', 'svc_ref', 'feedback_type', 'payload', 'creator', 'annotation_ref', 'runnable_ref',
  'call_ref', 'trigger_ref', 'queue_id', 'svc_user_id', 'created_at',
];

type FeedbackQuery = Parameters<LoupeClient['feedback']['query']['query']>[0];
export type FeedbackFilter = NonNullable<FeedbackQuery['filter']>;
type Feedback = Awaited<ReturnType<LoupeClient['feedback']['query']['query']>>['result'][number];

/** One page of feedback.query in its default order (created_at, id), continued by cursor. */
export function feedbackPage(client: LoupeClient, projectId: string, filter: FeedbackFilter | undefined, limit: number) {
  return pagedBy<Feedback>(async (paging) => {
    const answer = await client.feedback.query.query({ project_id: projectId, limit, ...(filter ? { filter } : {}), ...paging } as FeedbackQuery);
    return { rows: answer.result, next_cursor: answer.next_cursor };
  });
}

/** Rows written so far, kept by the caller so that a failure midway can say how many. */
export type Count = { written: number };

/**
 * Streams every matching feedback record to the sink; `hints` is the client's fetch, so that the
 * next page is asked for when the current one starts to arrive.
 */
export async function exportFeedback(
  client: LoupeClient,
  hints: CursorHints,
  projectId: string,
  filter: FeedbackFilter | undefined,
  pageSize: number,
  format: ExportFormat,
  sink: ByteSink,
  retry: Retry,
  progress: Progress,
  count: Count,
): Promise<void> {
  const encode = encoder(format, FEEDBACK_COLUMNS);
  if (encode.header) await sink.write(encode.header);
  for await (const rows of pages(feedbackPage(client, projectId, filter, pageSize), (listener) => hints.listen('feedback.query', listener), retry)) {
    await sink.write(encode.page(rows));
    count.written += rows.length;
    progress.update(count.written);
  }
}
