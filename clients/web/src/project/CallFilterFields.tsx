import { useId } from 'react';
import { MODEL_FILTER_PATH } from '../trace/call-model.ts';
import type { DraftField, FilterDraft } from './call-filter-draft.ts';
import { ConditionsEditor, MAX_CONDITIONS } from './ConditionsEditor.tsx';

const timeZone = new Intl.DateTimeFormat().resolvedOptions().timeZone;

export type FieldProblem = { field: DraftField; message: string };

/**
 * The fields of a CallFilter people use: op name, words, model, exception, start time range,
 * root calls only, and conditions on other attributes. The one call filter of the app: the call
 * browser applies it with Filter, a queue rule keeps it (CallFilterForm, RuleForm). `problem`
 * shows at its field; `fieldRef` hands the form the inputs a problem may concern, to focus.
 * `models`: models seen in the calls shown, offered as suggestions.
 */
export function CallFilterFields({
  draft,
  models,
  problem,
  onChange,
  fieldRef,
}: {
  draft: FilterDraft;
  models: string[];
  problem: FieldProblem | null;
  onChange: (changes: Partial<FilterDraft>) => void;
  fieldRef: (field: string, element: HTMLInputElement | null) => void;
}) {
  const id = useId();

  /** A start-time field with its error, when it has one. */
  const timeField = (field: 'startedFrom' | 'startedBefore', label: string) => {
    const refused = problem?.field === field;
    return (
      <div className="field">
        <label htmlFor={`${id}-${field}`}>{label}</label>
        <input
          id={`${id}-${field}`}
          ref={(element) => fieldRef(field, element)}
          type="datetime-local"
          step={1}
          value={draft[field]}
          onChange={(event) => onChange({ [field]: event.target.value })}
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
    <>
      <div className="filter-fields">
        <div className="field">
          <label htmlFor={`${id}-op`}>Op name</label>
          <input id={`${id}-op`} value={draft.opName} onChange={(event) => onChange({ opName: event.target.value })} autoComplete="off" aria-describedby={`${id}-op-hint`} />
          <p id={`${id}-op-hint`} className="field-about">
            Any part of it, in any case.
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-text`}>Words in inputs or output</label>
          <input id={`${id}-text`} type="search" value={draft.text} onChange={(event) => onChange({ text: event.target.value })} autoComplete="off" aria-describedby={`${id}-text-hint`} />
          <p id={`${id}-text-hint`} className="field-about">
            Whole words, all of them, in any case; up to 16.
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-model`}>Model</label>
          <input id={`${id}-model`} list={`${id}-models`} maxLength={1024} value={draft.model} onChange={(event) => onChange({ model: event.target.value })} autoComplete="off" aria-describedby={`${id}-model-hint`} />
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
          <select id={`${id}-exception`} value={draft.exception} onChange={(event) => onChange({ exception: event.target.value as FilterDraft['exception'] })}>
            <option value="any">Any call</option>
            <option value="with">With an exception</option>
            <option value="without">Without an exception</option>
          </select>
        </div>
        {timeField('startedFrom', 'Started from')}
        {timeField('startedBefore', 'Started before')}
        <div className="field root-only">
          <label className="check">
            <input type="checkbox" checked={draft.rootOnly} onChange={(event) => onChange({ rootOnly: event.target.checked })} aria-describedby={`${id}-root-hint`} />
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
      <ConditionsEditor
        id={id}
        name="attributes"
        noun="attribute"
        legend="Other attributes"
        about="Dotted paths into the call's attributes, such as resource.service.name. Numbers and true or false compare as such; put text in double quotes to compare it as text."
        conditions={draft.attributes}
        // The model, when given, is one of the call's attribute conditions.
        max={MAX_CONDITIONS - (draft.model.trim() ? 1 : 0)}
        problem={problem && problem.field.startsWith('attributes.') ? { key: problem.field, message: problem.message } : null}
        onChange={(attributes) => onChange({ attributes })}
        fieldRef={fieldRef}
      />
    </>
  );
}
