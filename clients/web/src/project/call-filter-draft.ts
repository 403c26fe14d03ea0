import type { CallFilter } from '@loupe/shared';
import { MODEL_FILTER_PATH } from '../trace/call-model.ts';
import { conditionsOfDrafts, type ConditionDraft } from './condition-draft.ts';

/** The call filter's fields as typed (the call browser's and a queue rule's): text, and the browser's local date-times. */
export type FilterDraft = {
  opName: string;
  text: string;
  model: string;
  exception: 'any' | 'with' | 'without';
  /** `<input type="datetime-local">` values ("2026-01-02T09:30"), in the browser's time zone; '' for none. */
  startedFrom: string;
  startedBefore: string;
  rootOnly: boolean;
  /** Conditions on other attributes than the model. */
  attributes: ConditionDraft[];
};

export const emptyFilterDraft = (): FilterDraft => ({ opName: '', text: '', model: '', exception: 'any', startedFrom: '', startedBefore: '', rootOnly: false, attributes: [] });

/** A field a problem is shown at: a time, or a part of an attribute condition (`attributes.2.value`). */
export type DraftField = 'startedFrom' | 'startedBefore' | `attributes.${number}.${'path' | 'value'}`;
export type FilterResult = { filter: CallFilter } | { problem: { field: DraftField; message: string } };

/** A local date-time as an instant; null when it is not one (February 31st included). */
export function instantOf(local: string): Date | null {
  const parts = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.exec(local);
  if (!parts) return null;
  // A date-time without an offset is read in the browser's time zone (ECMAScript's Date), and a
  // day past the month's end rolls over: read back, it then names another day.
  const date = new Date(local);
  const same = date.getFullYear() === Number(parts[1]) && date.getMonth() + 1 === Number(parts[2]) && date.getDate() === Number(parts[3]);
  return same ? date : null;
}

/**
 * The CallFilter (contract 5.1) the fields make: only the fields with something in them; a model
 * compares the attribute `gen_ai.request.model` exactly, before the other attribute conditions. A time that is not one, or a range that
 * ends before it starts, is a problem to show at its field instead.
 */
export function filterOfDraft(draft: FilterDraft): FilterResult {
  const filter: CallFilter = {};
  if (draft.opName.trim()) filter.op_name_contains = draft.opName.trim();
  if (draft.text.trim()) filter.text = draft.text.trim();
  const attributes = conditionsOfDrafts(draft.attributes);
  if ('problem' in attributes) {
    const { index, part, message } = attributes.problem;
    return { problem: { field: `attributes.${index}.${part}`, message } };
  }
  const model = draft.model.trim() ? [{ path: MODEL_FILTER_PATH, op: 'eq' as const, value: draft.model.trim() }] : [];
  if (model.length || attributes.conditions.length) filter.attributes = [...model, ...attributes.conditions];
  if (draft.exception !== 'any') filter.has_exception = draft.exception === 'with';
  const times = { startedFrom: draft.startedFrom, startedBefore: draft.startedBefore };
  const instants: { startedFrom?: Date; startedBefore?: Date } = {};
  for (const field of ['startedFrom', 'startedBefore'] as const) {
    if (!times[field]) continue;
    const instant = instantOf(times[field]);
    if (!instant) return { problem: { field, message: 'Enter a date and a time.' } };
    instants[field] = instant;
  }
  if (instants.startedFrom && instants.startedBefore && instants.startedBefore <= instants.startedFrom) {
    return { problem: { field: 'startedBefore', message: 'This is not after the start of the range.' } };
  }
  if (instants.startedFrom) filter.started_after = instants.startedFrom.toISOString();
  if (instants.startedBefore) filter.started_before = instants.startedBefore.toISOString();
  if (draft.rootOnly) filter.root_only = true;
  return { filter };
}
