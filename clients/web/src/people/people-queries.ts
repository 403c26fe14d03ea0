import type { LoupeClient, RouterOutputs } from '@loupe/client';
import { queryOptions } from '@tanstack/react-query';

// The people pages' reads, keyed by session like every signed-in query (never by the key itself).

export type OwnApiKey = RouterOutputs['me']['apiKeys']['query']['api_keys'][number];
export type Member = RouterOutputs['entities']['members']['query']['members'][number];
export type Invitation = RouterOutputs['entities']['invitations']['query']['invitations'][number];

export const ownKeysQuery = (client: LoupeClient, session: number) =>
  queryOptions({ queryKey: ['session', session, 'own-api-keys'], queryFn: async () => (await client.me.apiKeys.query.query({})).api_keys });

export const membersQuery = (client: LoupeClient, session: number, entity: string) =>
  queryOptions({ queryKey: ['session', session, 'entity', entity, 'members'], queryFn: async () => (await client.entities.members.query.query({ entity })).members });

export const invitationsQuery = (client: LoupeClient, session: number, entity: string) =>
  queryOptions({
    queryKey: ['session', session, 'entity', entity, 'invitations'],
    queryFn: async () => (await client.entities.invitations.query.query({ entity })).invitations,
  });

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A stored time as people read it, in a <time> element's words. */
export function shownTime(iso: string): string {
  return dateTime.format(new Date(iso));
}
