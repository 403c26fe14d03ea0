import type { z } from 'zod';
import { requireProjectAccess, type Access } from '../domain/access.ts';
import { requireQueuesOpenTo } from '../domain/queue-access.ts';
import { batchLimited, protectedProcedure } from './trpc.ts';

// Every procedure on a project's data is built here, so the caller's access to the project is
// checked once, in one place, after the input is validated (a bad request is a 400 whoever sends
// it) and before any work. Domain functions take the project as given and check nothing beyond
// what an annotator may see of it (domain/queue-access.ts).

type OneProject = { project_id: string };
type SomeQueues = OneProject & ({ queue_id: string } | { queue_ids: readonly string[] });
type ProjectBatch = { batch: readonly OneProject[] };

/** A procedure on one project (`project_id` of the input), open to the roles `access` allows (domain/access.ts). */
export function projectProcedure<Input extends z.ZodType<OneProject>>(access: Access, input: Input) {
  return protectedProcedure.input(input).use(({ ctx, input: parsed, next }) => {
    requireProjectAccess(ctx.user, parsed.project_id, access);
    return next();
  });
}

/**
 * A procedure on queues of a project (`queue_id`, or `queue_ids`): as projectProcedure, and an
 * annotator must have each of them open to them (contract 5.11; 403).
 */
export function queueProcedure<Input extends z.ZodType<SomeQueues>>(access: Access, input: Input) {
  return protectedProcedure.input(input).use(async ({ ctx, input: parsed, next }) => {
    requireProjectAccess(ctx.user, parsed.project_id, access);
    const queueIds = 'queue_id' in parsed ? [parsed.queue_id] : parsed.queue_ids;
    await requireQueuesOpenTo(ctx.db, { user: ctx.user, projectId: parsed.project_id, queueIds });
    return next();
  });
}

/**
 * A batch whose elements each name their project: access to every one of them is checked before
 * any element is written (the batch is all or nothing). Over the record limit → 413 first.
 */
export function projectBatchProcedure<Input extends z.ZodType<ProjectBatch>>(access: Access, input: Input) {
  return batchLimited.input(input).use(({ ctx, input: parsed, next }) => {
    for (const projectId of new Set(parsed.batch.map((element) => element.project_id))) requireProjectAccess(ctx.user, projectId, access);
    return next();
  });
}
