import { z } from 'zod';
import { ProjectId } from './project.ts';
import { ClientId, FilterString, filterValues, JsonObject, JsonValue, Limit, Cursor, NextCursor, Offset } from './query.ts';
import { Timestamp } from './time.ts';

/** Any RFC 3339 date-time; stored and returned in UTC with milliseconds. */
export const DateTimeInput = z.iso.datetime({ offset: true });

export const CallCreateReq = z
  .strictObject({
    project_id: ProjectId,
    id: ClientId.optional(),
    trace_id: ClientId.optional(),
    op_name: z.string().min(1).max(1024),
    started_at: DateTimeInput,
    ended_at: DateTimeInput.nullable().optional(),
    inputs: JsonObject.nullable().optional(),
    output: JsonValue.optional(),
    attributes: JsonObject.nullable().optional(),
    exception: z.string().max(65_536).nullable().optional(),
  })
  .meta({ id: 'CallCreateReq' });
export type CallCreateReq = z.infer<typeof CallCreateReq>;

export const CallBatchCreateReq = z.strictObject({ batch: z.array(CallCreateReq) });
export const CallBatchCreateRes = z.strictObject({ res: z.array(z.strictObject({ id: z.string() })) });

export const Call = z
  .strictObject({
    project_id: z.string(),
    id: z.string(),
    trace_id: z.string(),
    op_name: z.string(),
    started_at: Timestamp,
    ended_at: Timestamp.nullable(),
    inputs: JsonObject.nullable(),
    output: JsonValue.nullable(),
    attributes: JsonObject.nullable(),
    exception: z.string().nullable(),
    created_at: Timestamp,
    created_by: z.string(),
  })
  .meta({ id: 'Call' });
export type Call = z.infer<typeof Call>;

export const CallReadReq = z.strictObject({ project_id: ProjectId, call_id: ClientId });
export const CallReadRes = z.strictObject({ call: Call });

export const CallQueryReq = z.strictObject({
  project_id: ProjectId,
  filter: z
    .strictObject({
      call_ids: filterValues(ClientId).optional(),
      op_names: filterValues(FilterString).optional(),
      trace_ids: filterValues(FilterString).optional(),
    })
    .optional(),
  limit: Limit.optional(),
  offset: Offset.optional(),
  cursor: Cursor.optional(),
});
export type CallQueryReq = z.infer<typeof CallQueryReq>;
export const CallQueryRes = z.strictObject({ calls: z.array(Call) , next_cursor: NextCursor });
