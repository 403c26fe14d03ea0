import type { LoupeClient, RouterOutputs } from '@loupe/client';
import { queryOptions } from '@tanstack/react-query';

export type Agreement = RouterOutputs['annotationQueues']['agreement']['agreement'][number];
export type AgreementPair = Agreement['pairs'][number];
export type Disagreement = Agreement['disagreements'][number];
/** A level of measurement (an unrated free-text spec has none: null). */
export type Level = NonNullable<Agreement['level']>;
/** Levels of measurement chosen over those the specs' schemas imply, by scorer ref. */
export type Levels = Record<string, Level>;

/** Agreement per scorer spec of a queue (contract 5.7), at each spec's own level of measurement unless another is chosen. */
export const agreementQuery = (client: LoupeClient, session: number, projectId: string, queueId: string, levels: Levels) =>
  queryOptions({
    queryKey: ['session', session, 'agreement', projectId, queueId, levels],
    queryFn: async () =>
      (await client.annotationQueues.agreement.query({ project_id: projectId, queue_id: queueId, ...(Object.keys(levels).length ? { levels } : {}) })).agreement,
  });
