import type { ServerResponse } from 'node:http';
import type { StoredBatch } from '../domain/idempotency.ts';

/**
 * How many records of a batch write this request stored that were not stored before (the rest
 * were retries by id, answered from what was stored), as a response header on `calls/batch/create`
 * and `feedback/batch/create`: the bodies are fixed by the contract, and a client that repeats an
 * import wants to say "0 new". In a /trpc batch of several writes, their sum.
 */
export const NEW_RECORDS_HEADER = 'Loupe-New-Records';

/** The batch's results, its count of new records added to the answer's header. */
export function answerNewRecords<R>(res: ServerResponse, stored: StoredBatch<R>): R[] {
  if (!res.headersSent) res.setHeader(NEW_RECORDS_HEADER, String(Number(res.getHeader(NEW_RECORDS_HEADER) ?? 0) + stored.newRecords));
  return stored.results;
}
