import type { CallFilter } from '@loupe/shared';
import { useRef, useState, type FormEvent } from 'react';
import { emptyFilterDraft, filterOfDraft, type FilterDraft } from './call-filter-draft.ts';
import { CallFilterFields, type FieldProblem } from './CallFilterFields.tsx';

/**
 * The call browser's filter: the call filter's fields (CallFilterFields), applied together with
 * Filter (or Enter). `models`: models seen in the calls shown, offered as suggestions.
 */
export function CallFilterForm({ filtered, models, onFilter }: { filtered: boolean; models: string[]; onFilter: (filter: CallFilter) => void }) {
  const [draft, setDraft] = useState<FilterDraft>(emptyFilterDraft);
  const [problem, setProblem] = useState<FieldProblem | null>(null);
  const fields = useRef(new Map<string, HTMLInputElement>());
  const change = (changes: Partial<FilterDraft>) => {
    setDraft((current) => ({ ...current, ...changes }));
    setProblem(null);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const result = filterOfDraft(draft);
    if ('problem' in result) {
      setProblem(result.problem);
      fields.current.get(result.problem.field)?.focus();
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

  return (
    <form className="filters call-filters" onSubmit={submit} role="search" aria-label="Filter calls">
      <CallFilterFields
        draft={draft}
        models={models}
        problem={problem}
        onChange={change}
        fieldRef={(field, element) => {
          if (element) fields.current.set(field, element);
          else fields.current.delete(field);
        }}
      />
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
