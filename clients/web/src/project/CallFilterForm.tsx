import type { CallFilter } from '@loupe/shared';
import { useId, useRef, useState, type FormEvent } from 'react';
import { MODEL_FILTER_PATH } from '../trace/call-model.ts';
import { emptyFilterDraft, filterOfDraft, type DraftField, type FilterDraft } from './call-filter-draft.ts';

const timeZone = new Intl.DateTimeFormat().resolvedOptions().timeZone;

/**
 * The call browser's filter: the fields of a CallFilter people use (op name, words, model,
 * exception, start time range, root calls only), applied together with Filter (or Enter).
 * `models`: models seen in the calls shown, offered as suggestions.
 */
export function CallFilterForm({ filtered, models, onFilter }: { filtered: boolean; models: string[]; onFilter: (filter: CallFilter) => void }) {
  const id = useId();
  const [draft, setDraft] = useState<FilterDraft>(emptyFilterDraft);
  const [problem, setProblem] = useState<{ field: DraftField; message: string } | null>(null);
  const fields = useRef<Partial<Record<DraftField, HTMLInputElement | null>>>({});
  const change = (changes: Partial<FilterDraft>) => {
    setDraft((current) => ({ ...current, ...changes }));
    setProblem(null);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const result = filterOfDraft(draft);
    if ('problem' in result) {
      setProblem(result.problem);
      fields.current[result.problem.field]?.focus();
      return;
    }
    setProblem(null);
    onFilter(result.filter);
  };
  const clear = () => {
    setDraft(emptyFilterDraft());
    setProblem(null);
    onFilter({});
  };

  /** A start-time field with its error, when it has one. */
  const timeField = (field: DraftField, label: string) => {
    const refused = problem?.field === field;
    return (
      <div className="field">
        <label htmlFor={`${id}-${field}`}>{label}</label>
        <input
          id={`${id}-${field}`}
          ref={(element) => {
            fields.current[field] = element;
          }}
          type="datetime-local"
          step={1}
          value={draft[field]}
          onChange={(event) => change({ [field]: event.target.value })}
          aria-invalid={refused || undefined}
          aria-describedby={[`${id}-zone`, refused ? `${id}-${field}-error` : null].filter(Boolean).join(' ')}
        />
        {refused ? (
          <p id={`${id}-${field}-error`} className="error field-error">
            {problem.message}
          </p>
        ) : null}
      </div>
    );
  };

  return (
    <form className="filters call-filters" onSubmit={submit} role="search" aria-label="Filter calls">
      <div className="filter-fields">
        <div className="field">
          <label htmlFor={`${id}-op`}>Op name</label>
          <input id={`${id}-op`} value={draft.opName} onChange={(event) => change({ opName: event.target.value })} autoComplete="off" aria-describedby={`${id}-op-hint`} />
          <p id={`${id}-op-hint`} className="field-about">
            Any part of it, in any case.
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-text`}>Words in inputs or output</label>
          <input id={`${id}-text`} type="search" value={draft.text} onChange={(event) => change({ text: event.target.value })} autoComplete="off" aria-describedby={`${id}-text-hint`} />
          <p id={`${id}-text-hint`} className="field-about">
            Whole words, all of them, in any case; up to 16.
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-model`}>Model</label>
          <input id={`${id}-model`} list={`${id}-models`} maxLength={1024} value={draft.model} onChange={(event) => change({ model: event.target.value })} autoComplete="off" aria-describedby={`${id}-model-hint`} />
          <datalist id={`${id}-models`}>
            {models.map((model) => (
              <option key={model} value={model} />
            ))}
          </datalist>
          <p id={`${id}-model-hint`} className="field-about">
            Exactly the attribute <code>{MODEL_FILTER_PATH}</code>.
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-exception`}>Exception</label>
          <select id={`${id}-exception`} value={draft.exception} onChange={(event) => change({ exception: event.target.value as FilterDraft['exception'] })}>
            <option value="any">Any call</option>
            <option value="with">With an exception</option>
            <option value="without">Without an exception</option>
          </select>
        </div>
        {timeField('startedFrom', 'Started from')}
        {timeField('startedBefore', 'Started before')}
        <div className="field root-only">
          <label className="check">
            <input type="checkbox" checked={draft.rootOnly} onChange={(event) => change({ rootOnly: event.target.checked })} aria-describedby={`${id}-root-hint`} />
            Root calls only
          </label>
          <p id={`${id}-root-hint`} className="field-about">
            Calls with no parent: the top call of each trace.
          </p>
        </div>
      </div>
      <p id={`${id}-zone`} className="field-about">
        Times are in your time zone, {timeZone}.
      </p>
      <div className="filter-actions">
        <button type="submit">Filter</button>
        {filtered ? (
          <button type="button" className="secondary" onClick={clear}>
            Show all calls
          </button>
        ) : null}
      </div>
    </form>
  );
}
