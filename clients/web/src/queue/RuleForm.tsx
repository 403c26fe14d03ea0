import type { LoupeClient } from '@loupe/client';
import { useQuery, type UseQueryResult } from '@tanstack/react-query';
import { useId, useRef, useState, type FormEvent } from 'react';
import { messageOf } from '../api.ts';
import type { DraftField, FilterDraft } from '../project/call-filter-draft.ts';
import { CallFilterFields } from '../project/CallFilterFields.tsx';
import { ConditionsEditor } from '../project/ConditionsEditor.tsx';
import type { Refusal } from '../project/refusal.ts';
import { useDebouncedValue } from '../useDebouncedValue.ts';
import { count, dateWords, emptyRuleDraft, previewAskOf, previewWords, ruleOfDraft, type RuleDraft, type RuleProblem } from './rule-draft.ts';
import { rulePreviewQuery, type RuleCreate, type RulePreview } from './rule-queries.ts';

/** The request fields a refusal may name, and the form field each is typed in. */
export const RULE_FIELDS: Record<string, string> = { name: 'name', sample_rate: 'percent', max_items_per_day: 'cap', backfill_since: 'backfillSince' };

/** How long the filter must stay unchanged before the preview counts again. */
const PREVIEW_DEBOUNCE_MS = 300;

/**
 * A new queue rule: its name, what it adds (calls as they are stored, by the call filter; or the
 * calls that get matching feedback, by feedback type and payload conditions), the share of
 * matching calls added, a daily cap and, for a call rule, a backfill over the calls already
 * stored. A call rule's preview counts, as the fields change, what it would match and add among
 * the stored calls. `refusal`: the server's, shown at the field it names.
 */
export function RuleForm({
  client,
  session,
  projectId,
  queueId,
  busy,
  refusal,
  onSubmit,
  onCancel,
}: {
  client: LoupeClient;
  session: number;
  projectId: string;
  queueId: string;
  busy: boolean;
  refusal: Refusal | null;
  onSubmit: (rule: RuleCreate) => void;
  onCancel: () => void;
}) {
  const id = useId();
  const [draft, setDraft] = useState<RuleDraft>(emptyRuleDraft);
  const [problem, setProblem] = useState<RuleProblem | null>(null);
  const fields = useRef(new Map<string, HTMLInputElement>());
  const fieldRef = (field: string, element: HTMLInputElement | null) => {
    if (element) fields.current.set(field, element);
    else fields.current.delete(field);
  };
  const change = (changes: Partial<RuleDraft>) => {
    setDraft((current) => ({ ...current, ...changes }));
    setProblem(null);
  };
  const changeCall = (changes: Partial<FilterDraft>) => {
    setDraft((current) => ({ ...current, call: { ...current.call, ...changes } }));
    setProblem(null);
  };

  // The preview follows the draft once typing pauses; a newer ask cancels a stale one.
  const ask = useDebouncedValue(draft.trigger === 'call' ? previewAskOf(draft) : null, PREVIEW_DEBOUNCE_MS);
  const preview = useQuery({ ...rulePreviewQuery(client, session, projectId, queueId, ask ?? { filter: {} }), enabled: ask !== null });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const result = ruleOfDraft(draft);
    if ('problem' in result) {
      setProblem(result.problem);
      fields.current.get(result.problem.field)?.focus();
      return;
    }
    setProblem(null);
    onSubmit(result.rule);
  };

  // What is shown at a field: the form's own problem, else the server's refusal.
  const shown: RuleProblem | null = problem ?? (refusal?.field ? { field: RULE_FIELDS[refusal.field] ?? refusal.field, message: refusal.reason } : null);
  const errorId = (field: string) => `${id}-${field}-error`;
  /** A field's ref and, when refused, its error; `hint`: the id of its description. */
  const invalid = (field: string, hint?: string) => {
    const refused = shown?.field === field;
    const describedBy = [hint, refused ? errorId(field) : null].filter(Boolean).join(' ');
    return {
      ref: (element: HTMLInputElement | null) => fieldRef(field, element),
      ...(refused ? { 'aria-invalid': true as const } : {}),
      ...(describedBy ? { 'aria-describedby': describedBy } : {}),
    };
  };
  const fieldError = (field: string) =>
    shown?.field === field ? (
      <p id={errorId(field)} className="error field-error">
        {shown.message}
      </p>
    ) : null;
  const callProblem = shown?.field.startsWith('call.') ? { field: shown.field.slice('call.'.length) as DraftField, message: shown.message } : null;

  return (
    <form className="rule-form" onSubmit={submit} noValidate>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input id={`${id}-name`} value={draft.name} onChange={(event) => change({ name: event.target.value })} autoComplete="off" maxLength={256} {...invalid('name')} />
        {fieldError('name')}
      </div>
      <fieldset className="field trigger-choice">
        <legend>Adds</legend>
        <label className="check">
          <input type="radio" name={`${id}-trigger`} checked={draft.trigger === 'call'} onChange={() => change({ trigger: 'call' })} />
          Calls that match a filter, as they are stored
        </label>
        <label className="check">
          <input type="radio" name={`${id}-trigger`} checked={draft.trigger === 'feedback'} onChange={() => change({ trigger: 'feedback' })} />
          Calls that get matching feedback (a thumbs-down, say)
        </label>
      </fieldset>
      {draft.trigger === 'call' ? (
        <fieldset className="field rule-filter call-filters">
          <legend>Calls</legend>
          <CallFilterFields draft={draft.call} models={[]} problem={callProblem} onChange={changeCall} fieldRef={(field, element) => fieldRef(`call.${field}`, element)} />
        </fieldset>
      ) : (
        <fieldset className="field rule-filter">
          <legend>Feedback</legend>
          <div className="field">
            <label htmlFor={`${id}-types`}>Feedback types</label>
            <input id={`${id}-types`} value={draft.feedbackTypes} onChange={(event) => change({ feedbackTypes: event.target.value })} autoComplete="off" aria-describedby={`${id}-types-hint`} />
            <p id={`${id}-types-hint`} className="field-about">
              Any of these, separated by commas, such as <code>svc.reaction.1</code>; none: any type.
            </p>
          </div>
          <ConditionsEditor
            id={id}
            name="payload"
            noun="payload condition"
            legend="Payload"
            about={'Dotted paths into the record\'s payload, such as detoned_alias equals ":thumbs_down:". Numbers and true or false compare as such; put text in double quotes to compare it as text.'}
            conditions={draft.payload}
            problem={shown?.field.startsWith('payload.') ? { key: shown.field, message: shown.message } : null}
            onChange={(payload) => change({ payload })}
            fieldRef={fieldRef}
          />
        </fieldset>
      )}
      <div className="field-row">
        <div className="field">
          <label htmlFor={`${id}-percent`}>Share of matching calls added (%)</label>
          <input id={`${id}-percent`} type="number" min={0} max={100} step="any" value={draft.percent} onChange={(event) => change({ percent: event.target.value })} {...invalid('percent')} />
          {fieldError('percent')}
        </div>
        <div className="field">
          <label htmlFor={`${id}-cap`}>Most items per day</label>
          <input id={`${id}-cap`} type="number" min={1} step={1} value={draft.cap} onChange={(event) => change({ cap: event.target.value })} {...invalid('cap', `${id}-cap-hint`)} />
          <p id={`${id}-cap-hint`} className="field-about">
            Per UTC day; empty: no cap.
          </p>
          {fieldError('cap')}
        </div>
      </div>
      {draft.trigger === 'call' ? (
        <div className="field backfill-field">
          <label className="check">
            <input type="checkbox" checked={draft.backfill} onChange={(event) => change({ backfill: event.target.checked })} />
            Also add calls already stored (a backfill)
          </label>
          {draft.backfill ? (
            <div className="field">
              <label htmlFor={`${id}-since`}>Stored calls that started from</label>
              <input id={`${id}-since`} type="datetime-local" step={1} value={draft.backfillSince} onChange={(event) => change({ backfillSince: event.target.value })} {...invalid('backfillSince')} />
              {fieldError('backfillSince')}
            </div>
          ) : null}
        </div>
      ) : null}
      {draft.trigger === 'call' ? <PreviewLine ask={ask} preview={preview} backfill={draft.backfill} /> : (
        <p className="field-about">A feedback rule adds a call when feedback about it arrives: there is nothing to count beforehand.</p>
      )}
      {refusal && !shown ? (
        <p className="error" role="alert">
          {refusal.reason}
        </p>
      ) : null}
      <div className="actions">
        <button type="submit" disabled={busy}>
          Create rule
        </button>
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The preview's answer, read out when it changes. */
function PreviewLine({
  ask,
  preview,
  backfill,
}: {
  ask: ReturnType<typeof previewAskOf>;
  preview: UseQueryResult<RulePreview>;
  backfill: boolean;
}) {
  const rate = ask?.sample_rate ?? 1;
  return (
    <div className="rule-preview" role="status" aria-busy={preview.isFetching}>
      {ask === null ? (
        <p className="muted">Complete the fields to see how many stored calls the rule would add.</p>
      ) : preview.isError ? (
        <p className="error">{messageOf(preview.error)}</p>
      ) : preview.data ? (
        <>
          <p className={`preview-count${preview.isPlaceholderData ? ' stale' : ''}`}>{previewWords(preview.data, rate)}</p>
          <p className="field-about">
            {backfill
              ? `Among the stored calls that started from ${ask.since ? dateWords(ask.since) : 'the backfill\'s start'}: the backfill adds these, then new calls as they are stored.`
              : 'Among the stored calls: without a backfill the rule adds only calls stored from now on.'}
            {rate < 1 ? ' Which calls are taken depends on the rule, so the count is an estimate.' : ''}
          </p>
          {preview.data.scan_limit_reached ? (
            <p className="field-about scan-limit">Counted over the newest {count(preview.data.scanned_calls)} calls only (the preview's scan limit): more calls lie in the range.</p>
          ) : null}
        </>
      ) : (
        <p className="muted">Counting the stored calls…</p>
      )}
    </div>
  );
}
