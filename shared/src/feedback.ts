import { z } from 'zod';
import { ProjectId } from './project.ts';
import { FilterString, filterValues, Limit, Cursor, NextCursor, Offset } from './query.ts';
import { Timestamp } from './time.ts';

/**
 * A feedback payload: any JSON object (JSON parsing already guarantees JSON values). Checked, not
 * copied: a record schema would rebuild every payload of a batch key by key, on the way in and again
 * on the way out (a tenth of the server's CPU at batch 1,000). Documented as such a record.
 */
export const FeedbackPayload = z
  .custom<Record<string, unknown>>(isJsonObject, { error: 'Invalid input: expected a JSON object' })
  .meta({ override: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: {}, description: 'a JSON object' } });

function isJsonObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

const OptionalRef = z.string().max(2048).nullable().optional();

/** One element of `POST /feedback/batch/create` (interface document field names). */
export const FeedbackCreateReq = z
  .strictObject({
    project_id: ProjectId,
    svc_ref: z.string().max(2048),
    feedback_type: z.string().min(1).max(256),
    payload: FeedbackPayload,
    id: z.uuid().optional().meta({ description: 'a UUID; the server makes a UUIDv7 when absent' }),
    creator: z.string().max(256).nullable().optional(),
    annotation_ref: OptionalRef,
    runnable_ref: OptionalRef,
    call_ref: OptionalRef,
    trigger_ref: OptionalRef,
    queue_id: z.string().max(128).nullable().optional(),
    svc_user_id: z.string().nullable().optional().meta({ description: 'accepted and ignored: the server sets it from the credentials' }),
  })
  .meta({ id: 'FeedbackCreateReq' });
export type FeedbackCreateReq = z.infer<typeof FeedbackCreateReq>;

export const FeedbackCreateRes = z
  .strictObject({ id: z.string(), created_at: Timestamp, svc_user_id: z.string(), payload: FeedbackPayload })
  .meta({ id: 'FeedbackCreateRes' });
export type FeedbackCreateRes = z.infer<typeof FeedbackCreateRes>;

export const FeedbackBatchCreateReq = z.strictObject({ batch: z.array(FeedbackCreateReq) });
export const FeedbackBatchCreateRes = z.strictObject({ res: z.array(FeedbackCreateRes) });

/** A stored record: every request field, plus created_at and the caller as svc_user_id. */
export const Feedback = z
  .strictObject({
    id: z.string(),
    project_id: z.string(),
    svc_ref: z.string(),
    feedback_type: z.string(),
    payload: FeedbackPayload,
    creator: z.string().nullable(),
    annotation_ref: z.string().nullable(),
    runnable_ref: z.string().nullable(),
    call_ref: z.string().nullable(),
    trigger_ref: z.string().nullable(),
    queue_id: z.string().nullable(),
    svc_user_id: z.string(),
    created_at: Timestamp,
  })
  .meta({ id: 'Feedback' });
export type Feedback = z.infer<typeof Feedback>;

export const FEEDBACK_SORT_FIELDS = ['created_at', 'feedback_type', 'creator'] as const;

export const FeedbackQueryReq = z.strictObject({
  project_id: ProjectId,
  filter: z
    .strictObject({
      ids: filterValues(FilterString).optional(),
      svc_refs: filterValues(FilterString).optional(),
      feedback_types: filterValues(FilterString).optional(),
      queue_id: FilterString.optional(),
      call_ref: FilterString.optional(),
      creator: FilterString.optional(),
      svc_user_id: FilterString.optional(),
      created_after: z.iso.datetime({ offset: true }).optional().meta({ description: 'created_at ≥ this' }),
      created_before: z.iso.datetime({ offset: true }).optional().meta({ description: 'created_at < this' }),
    })
    .optional(),
  sort_by: z
    .array(z.strictObject({ field: z.enum(FEEDBACK_SORT_FIELDS), direction: z.enum(['asc', 'desc']) }))
    .max(3)
    .optional(),
  limit: Limit.optional(),
  offset: Offset.optional(),
  cursor: Cursor.optional(),
});
export type FeedbackQueryReq = z.infer<typeof FeedbackQueryReq>;
export const FeedbackQueryRes = z.strictObject({ result: z.array(Feedback) , next_cursor: NextCursor });

export const FeedbackPurgeReq = z.strictObject({ project_id: ProjectId, ids: z.array(FilterString).min(1).max(10_000) });
export const FeedbackPurgeRes = z.strictObject({ deleted_count: z.int() });

export const FeedbackReplaceReq = FeedbackCreateReq.extend({ feedback_id: z.string().min(1).max(128) }).meta({ id: 'FeedbackReplaceReq' });
export type FeedbackReplaceReq = z.infer<typeof FeedbackReplaceReq>;
