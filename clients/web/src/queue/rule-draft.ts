import type { CallFilter } from '@loupe/shared';
import { emptyFilterDraft, filterOfDraft, instantOf, type FilterDraft } from '../project/call-filter-draft.ts';
import { conditionsOfDrafts, conditionWords, type ConditionDraft } from '../project/condition-draft.ts';
import type { QueueRule, RuleCreate, RulePreviewAsk } from './rule-queries.ts';

/** A queue rule's form as typed: the share of calls in percent, the daily cap and the backfill's start as text. */
export type RuleDraft = {
  name: string;
  trigger: 'call' | 'feedback';
  call: FilterDraft;
  /** Feedback types, separated by commas or spaces ("svc.reaction.1"). */
  feedbackTypes: string;
  payload: ConditionDraft[];
  percent: string;
  cap: string;
  backfill: boolean;
  /** An `<input type="datetime-local">` value, in the browser's time zone. */
  backfillSince: string;
};

export const emptyRuleDraft = (): RuleDraft => ({
  name: '',
  trigger: 'call',
  call: emptyFilterDraft(),
  feedbackTypes: '',
  payload: [],
  percent: '100',
  cap: '',
  backfill: false,
  backfillSince: '',
});

/** A field a problem is shown at: a rule field, `call.<field of the call filter>` or `payload.<i>.<part>`. */
export type RuleProblem = { field: string; message: string };

/** The filter a call rule's fields make, or the problem of one of them. */
function callFilterOf(draft: RuleDraft): { filter: CallFilter } | { problem: RuleProblem } {
  const result = filterOfDraft(draft.call);
  return 'problem' in result ? { problem: { field: `call.${result.problem.field}`, message: result.problem.message } } : result;
}

/** The share typed in percent as a sample rate (0 < r ≤ 1), or a problem. */
function rateOf(draft: RuleDraft): { rate: number } | { problem: RuleProblem } {
  const percent = Number(draft.percent.trim());
  if (draft.percent.trim() === '' || !Number.isFinite(percent) || percent <= 0 || percent > 100) {
    return { problem: { field: 'percent', message: 'Enter a share above 0 and at most 100.' } };
  }
  return { rate: percent / 100 };
}

/** The backfill's start as an instant, or null when there is none, or a problem. */
function backfillOf(draft: RuleDraft): { since: string | null } | { problem: RuleProblem } {
  if (draft.trigger !== 'call' || !draft.backfill) return { since: null };
  const instant = instantOf(draft.backfillSince);
  return instant ? { since: instant.toISOString() } : { problem: { field: 'backfillSince', message: 'Enter a date and a time.' } };
}

/** What the preview asks for the draft as it is (the filter, the share, the backfill's start), or null while it has a problem. */
export function previewAskOf(draft: RuleDraft): RulePreviewAsk | null {
  const filter = callFilterOf(draft);
  const rate = rateOf(draft);
  const backfill = backfillOf(draft);
  if ('problem' in filter || 'problem' in rate || 'problem' in backfill) return null;
  return { filter: filter.filter, sample_rate: rate.rate, ...(backfill.since ? { since: backfill.since } : {}) };
}

/** The create request the draft makes, or the first problem, at its field. The server checks the rest. */
export function ruleOfDraft(draft: RuleDraft): { rule: RuleCreate } | { problem: RuleProblem } {
  if (!draft.name.trim()) return { problem: { field: 'name', message: 'Enter a name.' } };
  let filter: RuleCreate['filter'];
  if (draft.trigger === 'call') {
    const call = callFilterOf(draft);
    if ('problem' in call) return call;
    filter = call.filter;
  } else {
    const types = draft.feedbackTypes.split(/[\s,]+/).filter(Boolean);
    const payload = conditionsOfDrafts(draft.payload);
    if ('problem' in payload) {
      const { index, part, message } = payload.problem;
      return { problem: { field: `payload.${index}.${part}`, message } };
    }
    filter = { ...(types.length ? { feedback_types: types } : {}), ...(payload.conditions.length ? { payload: payload.conditions } : {}) };
  }
  const rate = rateOf(draft);
  if ('problem' in rate) return rate;
  const cap = draft.cap.trim();
  if (cap && !(/^\d+$/.test(cap) && Number(cap) >= 1)) return { problem: { field: 'cap', message: 'Enter a whole number of items, or nothing for no cap.' } };
  const backfill = backfillOf(draft);
  if ('problem' in backfill) return backfill;
  return {
    rule: {
      name: draft.name.trim(),
      trigger: draft.trigger,
      filter,
      sample_rate: rate.rate,
      max_items_per_day: cap ? Number(cap) : null,
      ...(backfill.since ? { backfill_since: backfill.since } : {}),
    },
  };
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
export const dateWords = (iso: string) => dateFormat.format(new Date(iso));

const listWords = (values: readonly string[]) => values.map((value) => JSON.stringify(value)).join(', ');

/** A call filter's conditions in words, one per condition. */
function callFilterWords(filter: CallFilter): string[] {
  const words: string[] = [];
  if (filter.op_name_contains !== undefined) words.push(`op name contains ${JSON.stringify(filter.op_name_contains)}`);
  if (filter.op_names) words.push(`op name is one of ${listWords(filter.op_names)}`);
  if (filter.text !== undefined) words.push(`inputs or output have the words ${JSON.stringify(filter.text)}`);
  for (const condition of filter.attributes ?? []) words.push(conditionWords(condition));
  if (filter.has_exception !== undefined) words.push(filter.has_exception ? 'with an exception' : 'without an exception');
  if (filter.started_after !== undefined) words.push(`started from ${dateWords(filter.started_after)}`);
  if (filter.started_before !== undefined) words.push(`started before ${dateWords(filter.started_before)}`);
  if (filter.root_only) words.push('root calls only');
  if (filter.call_ids) words.push(`one of ${filter.call_ids.length} named calls`);
  if (filter.trace_ids) words.push(`in one of ${filter.trace_ids.length} named traces`);
  if (filter.parent_ids) words.push(`under one of ${filter.parent_ids.length} named calls`);
  return words;
}

/** A rule's filter in words, one per condition; empty when it takes every call (or every feedback record). */
export function ruleFilterWords(rule: Pick<QueueRule, 'trigger' | 'filter'>): string[] {
  if (rule.trigger === 'call') return callFilterWords(rule.filter);
  const { feedback_types: types, payload, call } = rule.filter;
  return [
    ...(types ? [`feedback type is one of ${listWords(types)}`] : []),
    ...(payload ?? []).map((condition) => `payload ${conditionWords(condition)}`),
    ...(call ? callFilterWords(call).map((words) => `its call: ${words}`) : []),
  ];
}

const numberFormat = new Intl.NumberFormat();
export const count = (n: number) => numberFormat.format(n);

/** The preview's answer in a sentence: "Would add about 250 of 5,012 matching calls" ("about" only when sampled). */
export function previewWords(preview: { matching_calls: number; would_add: number }, rate: number): string {
  const calls = preview.matching_calls === 1 ? 'matching call' : 'matching calls';
  return `Would add ${rate < 1 ? 'about ' : ''}${count(preview.would_add)} of ${count(preview.matching_calls)} ${calls}`;
}
