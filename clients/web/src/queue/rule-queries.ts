import type { LoupeClient, RouterInputs, RouterOutputs } from '@loupe/client';
import { keepPreviousData, queryOptions } from '@tanstack/react-query';

// What the queue page reads of its rules (contract 5.10). Keys sit under ['session', <id>] like
// every signed-in query, so signing out drops them.

export type QueueRule = RouterOutputs['annotationQueues']['rules']['query']['rules'][number];
export type RuleCreate = Omit<RouterInputs['annotationQueues']['rules']['create'], 'project_id' | 'queue_id'>;
export type RulePreviewAsk = Omit<RouterInputs['annotationQueues']['rules']['preview'], 'project_id' | 'queue_id' | 'trigger'>;
export type RulePreview = RouterOutputs['annotationQueues']['rules']['preview'];

/** While a backfill runs, its progress is read this often (a chunk that adds nothing sends no event). */
export const BACKFILL_POLL_MS = 2_000;

/** The queue's rules, oldest first, with their stats and backfill; read again every BACKFILL_POLL_MS while a backfill runs. */
export const queueRulesQuery = (client: LoupeClient, session: number, projectId: string, queueId: string) =>
  queryOptions({
    queryKey: ['session', session, 'queue-rules', projectId, queueId],
    queryFn: async () => (await client.annotationQueues.rules.query.query({ project_id: projectId, queue_id: queueId })).rules,
    refetchInterval: (query) => (query.state.data?.some((rule) => rule.backfill?.state === 'running') ? BACKFILL_POLL_MS : false),
  });

/**
 * What a call rule would match and add among the stored calls. Keyed by the request, so a changed
 * filter is a new query; the request is given TanStack's signal, so a request made stale by a newer
 * filter is cancelled. The last answer stays shown while the next is read.
 */
export const rulePreviewQuery = (client: LoupeClient, session: number, projectId: string, queueId: string, ask: RulePreviewAsk) =>
  queryOptions({
    queryKey: ['session', session, 'rule-preview', projectId, queueId, ask],
    queryFn: ({ signal }) => client.annotationQueues.rules.preview.query({ project_id: projectId, queue_id: queueId, trigger: 'call', ...ask }, { signal }),
    placeholderData: keepPreviousData,
    // A refused filter stays refused: its reason is shown at once.
    retry: false,
  });
