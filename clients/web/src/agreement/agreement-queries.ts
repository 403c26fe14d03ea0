import type { LoupeClient } from '@loupe/client';
import type { RouterOutputs } from '@loupe/server/router';
import { queryOptions } from '@tanstack/react-query';

export type Agreement = RouterOutputs['annotationQueues']['agreement']['agreement'][number];
export type AgreementPair = Agreement['pairs'][number];
export type Disagreement = Agreement['disagreements'][number];

/** Agreement per scorer spec of a queue (contract 5.7), at each spec's own level of measurement. */
export const agreementQuery = (client: LoupeClient, session: number, projectId: string, queueId: string) =>
  queryOptions({
    queryKey: ['session', session, 'agreement', projectId, queueId],
    queryFn: async () => (await client.annotationQueues.agreement.query({ project_id: projectId, queue_id: queueId })).agreement,
  });
