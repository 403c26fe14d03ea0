import { z } from 'zod';
import { ProjectId } from './project.ts';
import { FilterString, filterValues, JsonValue } from './query.ts';
import { Timestamp } from './time.ts';

export const SpecName = z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1-128 of [A-Za-z0-9._-]');
/** A JSON Schema, as a JSON object; the server compiles it. */
export const FieldSchema = z.record(z.string(), JsonValue).meta({
  description: 'a JSON Schema (draft 2020-12): at most 16 KiB of JSON, 32 levels deep and 16 distinct patterns; patterns run on RE2',
});

export const AnnotationSpecCreateReq = z.strictObject({
  project_id: ProjectId,
  name: SpecName,
  description: z.string().max(4096).nullable().optional(),
  field_schema: FieldSchema,
});
export type AnnotationSpecCreateReq = z.infer<typeof AnnotationSpecCreateReq>;

export const AnnotationSpecCreateRes = z.strictObject({
  ref: z.string(),
  name: z.string(),
  digest: z.string(),
  created_at: Timestamp,
});

export const AnnotationSpec = z
  .strictObject({
    ref: z.string(),
    project_id: z.string(),
    name: z.string(),
    digest: z.string(),
    description: z.string().nullable(),
    field_schema: FieldSchema,
    created_at: Timestamp,
    created_by: z.string(),
  })
  .meta({ id: 'AnnotationSpec' });
export type AnnotationSpec = z.infer<typeof AnnotationSpec>;

export const AnnotationSpecQueryReq = z.strictObject({
  project_id: ProjectId,
  names: filterValues(SpecName).optional(),
  refs: filterValues(FilterString).optional(),
});
export type AnnotationSpecQueryReq = z.infer<typeof AnnotationSpecQueryReq>;
export const AnnotationSpecQueryRes = z.strictObject({ specs: z.array(AnnotationSpec) });
