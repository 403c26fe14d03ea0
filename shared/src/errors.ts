import { z } from 'zod';

/**
 * The body of every error response. `code` is stable for machines; `reason` is one sentence for
 * people; `issues` lists schema violations when the request failed validation.
 */
export const ErrorBody = z
  .object({
    reason: z.string(),
    code: z.string(),
    request_id: z.string().nullable(),
    issues: z.array(z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })).optional(),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBody>;

export { fieldPath } from './field-path.ts';
