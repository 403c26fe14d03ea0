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
    parent_id: ClientId.nullable()
      .optional()
      .meta({ description: 'the call this one ran inside; null (or absent) for a trace\'s root. It need not be stored yet: spans arrive in any order' }),
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
    parent_id: z.string().nullable(),
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

/** The cap on a full-text `text`: characters and words (each word is one index lookup). */
export const MAX_CALL_TEXT_LENGTH = 256;
export const MAX_CALL_TEXT_WORDS = 16;
/** A word of `text`: a run of letters and digits (what both databases' text search index). */
export const CALL_TEXT_WORD = /[\p{L}\p{N}]+/gu;
export const MAX_ATTRIBUTE_CONDITIONS = 20;
/** A dotted path of identifiers into `attributes`: `gen_ai.request.model`. */
export const ATTRIBUTE_PATH = /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*){0,15}$/;

export const AttributeOp = z.enum(['eq', 'neq', 'exists', 'not_exists', 'gt', 'gte', 'lt', 'lte', 'contains']);
export type AttributeOp = z.infer<typeof AttributeOp>;

export const AttributeCondition = z
  .strictObject({
    path: z
      .string()
      .max(256)
      .regex(ATTRIBUTE_PATH, 'must be dotted identifiers (letters, digits, _ and -, each starting with a letter or _), at most 16, 256 characters')
      .meta({ description: 'dotted path into the call\'s attributes, e.g. gen_ai.request.model' }),
    op: AttributeOp,
    value: z.union([z.string().max(1024), z.number(), z.boolean()]).optional(),
  })
  .superRefine((condition, ctx) => {
    const needs = { exists: 'none', not_exists: 'none', gt: 'number', gte: 'number', lt: 'number', lte: 'number', contains: 'string' } as const;
    const wanted: 'none' | 'number' | 'string' | undefined = needs[condition.op as keyof typeof needs];
    const given = condition.value === undefined ? 'none' : typeof condition.value;
    if (wanted === undefined ? given === 'none' : given !== wanted) {
      const what = wanted === undefined ? 'a string, number or boolean' : wanted === 'none' ? 'no value' : `a ${wanted} value`;
      ctx.addIssue({ code: 'custom', path: ['value'], message: `op "${condition.op}" takes ${what}` });
    }
  })
  .meta({
    id: 'AttributeCondition',
    description:
      'eq/neq: same JSON type and value (neq: any other call, one without the path too); exists/not_exists: the path is present ' +
      '(a JSON null counts); gt/gte/lt/lte: a number at the path compared with a number; contains: a string at the path holds ' +
      'the value (case-sensitive)',
  });
export type AttributeCondition = z.infer<typeof AttributeCondition>;

/** Contract 5.1: which calls; every condition given must hold. The calls query, queue rules and the web app share it. */
export const CallFilter = z
  .strictObject({
    call_ids: filterValues(ClientId).optional(),
    op_names: filterValues(FilterString).optional(),
    op_name_contains: z.string().min(1).max(1024).optional().meta({ description: 'case-insensitive substring of op_name' }),
    trace_ids: filterValues(FilterString).optional(),
    parent_ids: filterValues(ClientId).optional().meta({ description: 'calls that ran inside one of these calls (their parent_id is one of them)' }),
    root_only: z.boolean().optional().meta({ description: 'true: only calls with no parent (a trace\'s roots); false is the same as absent' }),
    started_after: DateTimeInput.optional().meta({ description: 'started_at ≥ this' }),
    started_before: DateTimeInput.optional().meta({ description: 'started_at < this' }),
    has_exception: z.boolean().optional(),
    text: z
      .string()
      .max(MAX_CALL_TEXT_LENGTH)
      .refine((text) => (text.match(CALL_TEXT_WORD)?.length ?? 0) > 0, 'holds no word (letters or digits)')
      .refine((text) => (text.match(CALL_TEXT_WORD)?.length ?? 0) <= MAX_CALL_TEXT_WORDS, `holds more than ${MAX_CALL_TEXT_WORDS} words`)
      .optional()
      .meta({
        description:
          `calls whose inputs or output (their string values, the first 60,000 characters of each) hold every word, whole and case-insensitive; at most ` +
          `${MAX_CALL_TEXT_LENGTH} characters and ${MAX_CALL_TEXT_WORDS} words. Search syntax is not interpreted: quotes, * and OR are plain text`,
      }),
    attributes: z.array(AttributeCondition).max(MAX_ATTRIBUTE_CONDITIONS).optional(),
  })
  .meta({ id: 'CallFilter' });
export type CallFilter = z.infer<typeof CallFilter>;

export const CallQueryReq = z.strictObject({
  project_id: ProjectId,
  filter: CallFilter.optional(),
  limit: Limit.optional(),
  offset: Offset.optional(),
  cursor: Cursor.optional(),
});
export type CallQueryReq = z.infer<typeof CallQueryReq>;
export const CallQueryRes = z.strictObject({ calls: z.array(Call) , next_cursor: NextCursor });
