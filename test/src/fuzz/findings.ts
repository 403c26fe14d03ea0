import { appRouter } from '@loupe/server/router';
import type { FuzzRequest } from './requests.ts';

// Server faults the fuzz found that are not fixed yet. Each has a failing reproduction of its own
// in findings.test.ts, so it stays visible; meanwhile the fuzz does not send requests that match
// one, so that every other invariant is still checked. TODO: remove an entry once its fault is fixed.

const procedures = (appRouter as unknown as { _def: { procedures: Record<string, { _def: { type: string } }> } })._def.procedures;

/** The procedure types (query, mutation) named by a /trpc path, unknown names left out. */
export function trpcProcedureTypes(path: string): Set<string> {
  if (!path.startsWith('/trpc/')) return new Set();
  const names = path.slice('/trpc/'.length).split('?')[0]!.split(',');
  return new Set(names.map((name) => procedures[name]?._def.type).filter((type): type is string => type !== undefined));
}

export type Finding = { name: string; matches(request: FuzzRequest): boolean };

export const OPEN_FINDINGS: Finding[] = [
  {
    // GET /trpc/annotationQueues.create,annotationSpecs.query?batch=1&input=%7B%7D (valid key) →
    // 400, Content-Type text/plain, "request_id": null.
    name: 'a /trpc batch mixing queries and mutations is answered 400 as text/plain without request_id',
    matches: (r) => trpcProcedureTypes(r.path).size > 1,
  },
];

/** The open finding a request would run into, if any. */
export function openFinding(request: FuzzRequest): Finding | undefined {
  return OPEN_FINDINGS.find((finding) => finding.matches(request));
}
