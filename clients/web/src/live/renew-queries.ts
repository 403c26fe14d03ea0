import type { QueryClient, QueryKey } from '@tanstack/react-query';

/**
 * Refetches the shown queries under a key because what they show changed on the server (a live
 * event). A query still on its first load is started again: TanStack replaces a running fetch only
 * when the query already has data, and otherwise lets the running read, which may have begun
 * before the change, settle the invalidation with what it read.
 */
export async function renewQueries(queryClient: QueryClient, queryKey: QueryKey): Promise<void> {
  await queryClient.cancelQueries({ queryKey, predicate: (query) => query.state.data === undefined && query.state.fetchStatus === 'fetching' });
  await queryClient.invalidateQueries({ queryKey });
}
