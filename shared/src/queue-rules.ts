import { z } from 'zod';
import { AttributeCondition, CallFilter, DateTimeInput, MAX_ATTRIBUTE_CONDITIONS } from './calls.ts';
import { fieldPath } from './errors.ts';
import { ProjectId } from './project.ts';
import { FilterString, filterValues } from './query.ts';
import { Timestamp } from './time.ts';

// Queue rules (contract 5.10): a queue fills itself with the calls that match a filter, as they
// are stored (trigger "call") or as feedback names them (trigger "feedback"), sampled
// deterministically.

export const RULE_TRIGGERS = ['call', 'feedback'] as const;
export const RuleTrigger = z.enum(RULE_TRIGGERS);
export type RuleTrigger = z.infer<typeof RuleTrigger>;

/** The fields only a feedback rule's filter has; a call rule's filter is a CallFilter. */
const FEEDBACK_ONLY = ['feedback_types', 'payload', 'call'] as const;

/**
 * A rule's filter, both kinds in one object (so that a wrong field is named, not "invalid input"):
 * trigger "call" takes CallFilter's fields; trigger "feedback" takes `feedback_types`, `payload`
 * (conditions on the feedback's payload, as attribute conditions on a call's attributes) and
 * `call` (a CallFilter on the call the feedback names). See ruleFilterProblem.
 */
export const QueueRuleFilter = CallFilter.extend({
  feedback_types: filterValues(FilterString).optional().meta({ description: 'feedback rule: the record\'s feedback_type is one of these' }),
  payload: z
    .array(AttributeCondition)
    .max(MAX_ATTRIBUTE_CONDITIONS)
    .optional()
    .meta({ description: "feedback rule: conditions on the record's payload (paths into the payload, ops as for attributes)" }),
  call: CallFilter.optional().meta({ description: 'feedback rule: conditions on the call the record names (call_ref, else a call svc_ref)' }),
}).meta({
  id: 'QueueRuleFilter',
  description:
    'trigger "call": a CallFilter. trigger "feedback": {feedback_types?, payload?, call?}. Every condition given must hold; ' +
    'a filter that cannot match (an empty list, started_after not before started_before, exists and not_exists of one path) is refused',
});
export type QueueRuleFilter = z.infer<typeof QueueRuleFilter>;

export type FilterProblem = { path: (string | number)[]; message: string };

/**
 * What makes `filter` wrong for a rule of `trigger`, or null: a field of the other kind, or
 * conditions that cannot hold together ("cannot match by construction", 5.10). One check for
 * creation (a schema refinement) and for a later change of the filter (the stored trigger).
 */
export function ruleFilterProblem(trigger: RuleTrigger, filter: QueueRuleFilter): FilterProblem | null {
  const record = filter as Record<string, unknown>;
  if (trigger === 'call') {
    const other = FEEDBACK_ONLY.find((field) => record[field] !== undefined);
    if (other) return { path: [other], message: `is a field of trigger "feedback" filters; a trigger "call" filter is a CallFilter` };
    return callFilterProblem(filter, []);
  }
  const stray = Object.keys(record).find((field) => !(FEEDBACK_ONLY as readonly string[]).includes(field));
  if (stray) return { path: [stray], message: `is not a field of trigger "feedback" filters (feedback_types, payload, call); conditions on the call go in filter.call` };
  if (filter.feedback_types?.length === 0) return { path: ['feedback_types'], message: 'is empty, so the rule could never match' };
  const payload = conditionsProblem(filter.payload, ['payload']);
  if (payload) return payload;
  return filter.call ? callFilterProblem(filter.call, ['call']) : null;
}

function callFilterProblem(filter: CallFilter, at: (string | number)[]): FilterProblem | null {
  for (const [field, value] of Object.entries(filter)) {
    if (Array.isArray(value) && value.length === 0 && field !== 'attributes') {
      return { path: [...at, field], message: 'is empty, so the rule could never match' };
    }
  }
  if (filter.started_after !== undefined && filter.started_before !== undefined && Date.parse(filter.started_after) >= Date.parse(filter.started_before)) {
    return { path: [...at, 'started_before'], message: 'is not after started_after, so the rule could never match' };
  }
  return conditionsProblem(filter.attributes, [...at, 'attributes']);
}

/** `exists` and `not_exists` of one path, or `eq` of one path to two values: never both true. */
function conditionsProblem(conditions: readonly AttributeCondition[] | undefined, at: (string | number)[]): FilterProblem | null {
  const seen = new Map<string, AttributeCondition>();
  for (const [index, condition] of (conditions ?? []).entries()) {
    const opposite = condition.op === 'exists' ? 'not_exists' : condition.op === 'not_exists' ? 'exists' : undefined;
    if (opposite && seen.has(`${condition.path}\u0000${opposite}`)) {
      return { path: [...at, index], message: `contradicts an earlier condition on "${condition.path}" (exists and not_exists), so the rule could never match` };
    }
    const earlier = condition.op === 'eq' ? seen.get(`${condition.path}\u0000eq`) : undefined;
    if (earlier && earlier.value !== condition.value) {
      return { path: [...at, index], message: `asks "${condition.path}" to equal a second value, so the rule could never match` };
    }
    seen.set(`${condition.path}\u0000${condition.op}`, condition);
  }
  return null;
}

/** A problem as a sentence that names its field: `filter.attributes[2]: …`. */
export function describeFilterProblem(problem: FilterProblem): string {
  return `filter.${fieldPath(problem.path)} ${problem.message}`;
}

// Path ids are plain strings: one that names nothing is a 404, not a schema error.
const QueueId = z.string().min(1).max(128).meta({ description: 'queue id' });
const RuleId = z.string().min(1).max(128).meta({ description: 'rule id' });
const RuleName = z.string().trim().min(1).max(256);
/** 0 < r ≤ 1 */
const SampleRate = z.number().gt(0).lte(1).meta({ description: '0 < r ≤ 1: the share of matching calls added, chosen by a stable hash of (rule id, call id)' });
const MaxItemsPerDay = z.int().min(1).max(1_000_000_000).meta({ description: 'the most items the rule adds per UTC day; then it skips (counted as capped)' });
const BackfillSince = DateTimeInput.meta({ description: 'consider the calls already stored that started at or after this, once, in the background' });

export const QueueRuleStats = z
  .strictObject({
    considered: z.int().meta({ description: 'calls (trigger "call", and backfills) or feedback records (trigger "feedback") the rule looked at' }),
    matched: z.int().meta({ description: 'calls that matched the filter (for a feedback rule: distinct calls named by matching records, per request)' }),
    sampled_out: z.int().meta({ description: 'matched calls the sample left out' }),
    capped: z.int().meta({ description: 'sampled calls skipped because max_items_per_day was reached' }),
    added: z.int().meta({ description: 'items the rule added (matched calls already in the queue, or deleted from it, are none of these three)' }),
    last_added_at: Timestamp.nullable(),
  })
  .meta({ id: 'QueueRuleStats' });

export const BACKFILL_STATES = ['running', 'done', 'failed'] as const;
export const QueueRuleBackfill = z
  .strictObject({
    since: Timestamp,
    state: z.enum(BACKFILL_STATES),
    considered: z.int().meta({ description: 'stored calls considered so far, each once' }),
    added: z.int(),
    reason: z.string().nullable().meta({ description: 'why it failed; null otherwise' }),
  })
  .meta({ id: 'QueueRuleBackfill' });

export const QueueRule = z
  .strictObject({
    id: z.string(),
    queue_id: z.string(),
    name: z.string(),
    trigger: RuleTrigger,
    filter: QueueRuleFilter,
    sample_rate: z.number(),
    max_items_per_day: z.int().nullable(),
    enabled: z.boolean(),
    created_by: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
    stats: QueueRuleStats,
    backfill: QueueRuleBackfill.nullable(),
  })
  .meta({ id: 'QueueRule' });
export type QueueRule = z.infer<typeof QueueRule>;

/** The filter must suit the trigger: its problem is an issue at `filter.<path>`. */
function filterSuitsTrigger(req: { trigger: RuleTrigger; filter: QueueRuleFilter }, ctx: z.RefinementCtx): void {
  const problem = ruleFilterProblem(req.trigger, req.filter);
  if (problem) ctx.addIssue({ code: 'custom', path: ['filter', ...problem.path], message: problem.message });
}

export const QueueRuleCreateReq = z
  .strictObject({
    queue_id: QueueId,
    project_id: ProjectId,
    name: RuleName,
    trigger: RuleTrigger,
    filter: QueueRuleFilter,
    sample_rate: SampleRate.optional().meta({ description: 'default 1' }),
    max_items_per_day: MaxItemsPerDay.nullable().optional(),
    backfill_since: BackfillSince.nullable().optional(),
  })
  .superRefine(filterSuitsTrigger);
export type QueueRuleCreateReq = z.infer<typeof QueueRuleCreateReq>;
export const QueueRuleRes = z.strictObject({ rule: QueueRule });

export const QueueRuleQueryReq = z.strictObject({ queue_id: QueueId, project_id: ProjectId });
export const QueueRuleQueryRes = z.strictObject({ rules: z.array(QueueRule) });

export const QueueRuleUpdateReq = z.strictObject({
  queue_id: QueueId,
  rule_id: RuleId,
  project_id: ProjectId,
  name: RuleName.optional(),
  filter: QueueRuleFilter.optional().meta({ description: 'checked against the rule\'s trigger, which does not change' }),
  sample_rate: SampleRate.optional(),
  max_items_per_day: MaxItemsPerDay.nullable().optional().meta({ description: 'null: no cap' }),
  enabled: z.boolean().optional(),
  backfill_since: BackfillSince.nullable()
    .optional()
    .meta({ description: 'a timestamp starts a new backfill from it (the previous one, if running, ends); null removes the backfill' }),
});
export type QueueRuleUpdateReq = z.infer<typeof QueueRuleUpdateReq>;

export const QueueRuleRef = z.strictObject({ queue_id: QueueId, rule_id: RuleId, project_id: ProjectId });

export const QueueRulePreviewReq = z
  .strictObject({
    queue_id: QueueId,
    project_id: ProjectId,
    trigger: z.literal('call').meta({ description: 'only call filters are previewed' }),
    filter: QueueRuleFilter,
    sample_rate: SampleRate.optional(),
    since: DateTimeInput.optional().meta({ description: 'only calls that started at or after this (a backfill_since)' }),
  })
  .superRefine(filterSuitsTrigger);
export type QueueRulePreviewReq = z.infer<typeof QueueRulePreviewReq>;
export const QueueRulePreviewRes = z.strictObject({
  matching_calls: z.int().meta({ description: 'stored calls (of those scanned) that match the filter' }),
  would_add: z
    .int()
    .meta({
      description:
        'of those, the calls not in the queue and never deleted from it, times sample_rate (rounded): with sample_rate 1 exactly what a backfill from `since` adds, ' +
        'without a daily cap; below 1 the expected count (the rule\'s own sample depends on its id)',
    }),
  scanned_calls: z.int().meta({ description: 'calls looked at: the newest in the filter\'s time range, at most the scan limit' }),
  scan_limit_reached: z.boolean().meta({ description: 'true when more calls lie in the range than the scan limit (LOUPE_RULE_PREVIEW_SCAN_LIMIT): the counts are of the newest ones only' }),
});
export type QueueRulePreviewRes = z.infer<typeof QueueRulePreviewRes>;
