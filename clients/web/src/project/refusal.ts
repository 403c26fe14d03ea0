import { TRPCClientError } from '@loupe/client';
import { messageOf, statusOf } from '../api.ts';

/** A refused write as a form shows it: the server's reason, beside the field it concerns if any. */
export type Refusal = { field: string | null; reason: string };

type ErrorShape = { reason?: string; issues?: { path: (string | number)[] }[] };

/**
 * Where a refusal belongs among a form's fields (request field names). A 400 names its field
 * either as the first schema issue's path or as the first word of its reason
 * (`field_schema is not a valid JSON Schema: …`, `scorer_refs[1] names no stored …`).
 */
export function refusalOf(error: unknown, fields: readonly string[]): Refusal {
  const reason = messageOf(error);
  if (!(error instanceof TRPCClientError) || statusOf(error) !== 400) return { field: null, reason };
  const shape = error.shape as ErrorShape | undefined;
  const named = shape?.issues?.[0]?.path[0] ?? /^([a-z_]+)\b/.exec(reason)?.[1];
  return { field: typeof named === 'string' && fields.includes(named) ? named : null, reason };
}
