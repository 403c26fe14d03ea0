import { createClient, TRPCClientError, type LoupeClient } from '@loupe/client';
import type { RouterInputs, RouterOutputs } from '@loupe/client';
import { queryOptions } from '@tanstack/react-query';

// Every call to Loupe goes through the typed client; TanStack Query caches and tracks them.

export type Me = RouterOutputs['me']['read'];
export type SignInMethods = RouterOutputs['auth']['methods'];
export type Project = RouterOutputs['projects']['query']['projects'][number];
export type ModelFilters = RouterInputs['models']['list'];
export type Model = RouterOutputs['models']['list']['data'][number];

/**
 * A client of this page's own origin: with the caller's key for a key session, else with the
 * session cookie the browser sends on its own (same-origin requests carry it). A 401 does not open
 * the browser's password prompt: the server leaves the Basic challenge out for the requests of its
 * own pages (server/src/api/error-policy.ts). Queries are batched; writes go out at once: Chromium
 * runs the batch's timer only after the frame that follows a key press, which held Submit and
 * next's first write back by about a frame (16 ms).
 */
export function apiClient(apiKey?: string): LoupeClient {
  return createClient({ url: window.location.origin, batch: 'queries', ...(apiKey ? { apiKey } : {}) });
}

/** The HTTP status of a failed call (0 when the server was not reached). */
export function statusOf(error: unknown): number {
  return error instanceof TRPCClientError ? Number(error.data?.httpStatus ?? 0) : 0;
}

/** What a failed call says to a person: the server's own reason, else a plain sentence. */
export function messageOf(error: unknown): string {
  // A schema violation's message is the validator's own dump; `reason` is the sentence for people.
  if (error instanceof TRPCClientError && statusOf(error) > 0) return (error.shape as { reason?: string } | undefined)?.reason ?? error.message;
  return 'The server could not be reached. Check the connection and try again.';
}

// The signed-in queries are keyed by session, never by the key itself.
export const meQuery = (client: LoupeClient, session: number) =>
  queryOptions({ queryKey: ['session', session, 'me'], queryFn: () => client.me.read.query({}) });

export const projectsQuery = (client: LoupeClient, session: number) =>
  queryOptions({ queryKey: ['session', session, 'projects'], queryFn: async () => (await client.projects.query.query({})).projects });

export const modelsQuery = (client: LoupeClient, filters: ModelFilters) =>
  queryOptions({ queryKey: ['models', filters], queryFn: async () => (await client.models.list.query(filters)).data });

/** How people may sign in here (public; the same for every visitor, kept for the page's life). */
export const signInMethodsQuery = () =>
  queryOptions({ queryKey: ['sign-in-methods'], queryFn: () => apiClient().auth.methods.query({}), staleTime: Infinity });
