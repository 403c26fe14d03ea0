import { invalid } from './errors.ts';

export type Paging = { limit?: number | undefined; offset?: number | undefined };
export type Page = { limit: number; offset: number };

export const DEFAULT_LIMIT = 100;

/** Resolves a query's limit and offset against the server's maximum. */
export function resolvePaging(paging: Paging, maxLimit: number): Page {
  const limit = paging.limit ?? DEFAULT_LIMIT;
  if (limit > maxLimit) throw invalid(`limit must be at most ${maxLimit}.`);
  return { limit, offset: paging.offset ?? 0 };
}
