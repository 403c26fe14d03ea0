import { z } from 'zod';
import { ProjectId } from './project.ts';
import { JsonValue } from './query.ts';

// Agreement between the annotators of a queue, per scorer spec (contract 5.7).

export const AgreementLevel = z.enum(['nominal', 'ordinal', 'interval', 'ratio']);
export type AgreementLevel = z.infer<typeof AgreementLevel>;

const ScorerRef = z.string().min(1).max(1024);

export const AnnotationQueueAgreementReq = z.strictObject({
  project_id: ProjectId,
  queue_id: z.string().min(1).max(128),
  /** Each must be a scorer of the queue; default: every scorer of the queue, in its order. */
  scorer_refs: z.array(ScorerRef).min(1).max(64).optional(),
  /** The level of measurement per scorer ref, over the one its spec's schema implies. */
  levels: z
    .record(ScorerRef, AgreementLevel)
    .refine((levels) => Object.keys(levels).length <= 64, 'at most 64 levels')
    .optional(),
});
export type AnnotationQueueAgreementReq = z.infer<typeof AnnotationQueueAgreementReq>;

const AnnotatorValue = z.strictObject({ annotator_user_id: z.string(), value: JsonValue });

export const Agreement = z
  .strictObject({
    scorer_ref: z.string(),
    name: z.string(),
    /** null for free text, which has no agreement level (contract 5.7) unless `levels` names one. */
    level: AgreementLevel.nullable(),
    annotators: z.array(z.string()),
    items_rated: z.int(),
    items_pairable: z.int(),
    values: z.int(),
    alpha: z.number().nullable(),
    observed_agreement: z.number().nullable(),
    pairs: z.array(
      z.strictObject({ annotator_a: z.string(), annotator_b: z.string(), items: z.int(), agreement: z.number(), kappa: z.number().nullable() }),
    ),
    disagreements: z.array(z.strictObject({ item_id: z.string(), call_id: z.string(), values: z.array(AnnotatorValue) })),
    reason: z.string().nullable(),
  })
  .meta({ id: 'Agreement' });
export type Agreement = z.infer<typeof Agreement>;

export const AnnotationQueueAgreementRes = z.strictObject({ agreement: z.array(Agreement) });
