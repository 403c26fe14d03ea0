import { useEffect, useRef } from 'react';
import { CONDITION_OPS, emptyCondition, takesValue, type ConditionDraft } from './condition-draft.ts';

/** Conditions a filter may hold per list (contract 5.1: at most 20 attribute conditions). */
export const MAX_CONDITIONS = 20;

/**
 * Rows of conditions on paths (a call's attributes, a feedback record's payload): path, op and
 * value, each named by its number ("Attribute 2 path"), with Add and Remove. `problem` marks the
 * part it concerns; `fieldRef` hands each input to the form that focuses a refused one, under
 * the key `<name>.<index>.<part>`.
 */
export function ConditionsEditor({
  id,
  name,
  noun,
  legend,
  about,
  conditions,
  max = MAX_CONDITIONS,
  problem,
  onChange,
  fieldRef,
}: {
  id: string;
  name: string;
  noun: string;
  legend: string;
  about: string;
  conditions: ConditionDraft[];
  max?: number;
  problem: { key: string; message: string } | null;
  onChange: (conditions: ConditionDraft[]) => void;
  fieldRef: (key: string, element: HTMLInputElement | null) => void;
}) {
  const change = (index: number, changes: Partial<ConditionDraft>) => onChange(conditions.map((condition, at) => (at === index ? { ...condition, ...changes } : condition)));
  const remove = (index: number) => onChange(conditions.filter((_, at) => at !== index));
  const noun1 = noun[0]!.toUpperCase() + noun.slice(1);
  // A row added from the keyboard takes the focus at its path.
  const added = useRef<number | null>(null);
  useEffect(() => {
    if (added.current === null) return;
    document.getElementById(`${id}-${name}-${added.current}-path`)?.focus();
    added.current = null;
  });
  const add = () => {
    added.current = conditions.length;
    onChange([...conditions, emptyCondition()]);
  };

  /** The props of a part's input: its error, when the problem is there. */
  const part = (index: number, which: 'path' | 'value') => {
    const key = `${name}.${index}.${which}`;
    const refused = problem?.key === key;
    return {
      ref: (element: HTMLInputElement | null) => fieldRef(key, element),
      'aria-invalid': refused || undefined,
      'aria-describedby': refused ? `${id}-${key}-error` : undefined,
      error: refused ? (
        <p id={`${id}-${key}-error`} className="error field-error">
          {problem.message}
        </p>
      ) : null,
    };
  };

  return (
    <fieldset className="field conditions">
      <legend>{legend}</legend>
      <p id={`${id}-${name}-about`} className="field-about">
        {about}
      </p>
      {conditions.length ? (
        <ol className="condition-rows">
          {conditions.map((condition, index) => {
            const label = `${noun1} ${index + 1}`;
            const { error: pathError, ...path } = part(index, 'path');
            const { error: valueError, ...value } = part(index, 'value');
            return (
              <li key={index} className="condition-row">
                <div className="condition-part">
                  <label htmlFor={`${id}-${name}-${index}-path`} className="visually-hidden">{`${label} path`}</label>
                  <input id={`${id}-${name}-${index}-path`} value={condition.path} placeholder="path" autoComplete="off" maxLength={256} onChange={(event) => change(index, { path: event.target.value })} {...path} />
                  {pathError}
                </div>
                <div className="condition-part">
                  <label htmlFor={`${id}-${name}-${index}-op`} className="visually-hidden">{`${label} test`}</label>
                  <select id={`${id}-${name}-${index}-op`} value={condition.op} onChange={(event) => change(index, { op: event.target.value as ConditionDraft['op'] })}>
                    {CONDITION_OPS.map(({ op, words }) => (
                      <option key={op} value={op}>
                        {words}
                      </option>
                    ))}
                  </select>
                </div>
                <div className="condition-part">
                  {takesValue(condition.op) ? (
                    <>
                      <label htmlFor={`${id}-${name}-${index}-value`} className="visually-hidden">{`${label} value`}</label>
                      <input id={`${id}-${name}-${index}-value`} value={condition.value} placeholder="value" autoComplete="off" maxLength={1024} onChange={(event) => change(index, { value: event.target.value })} {...value} />
                      {valueError}
                    </>
                  ) : null}
                </div>
                <button type="button" className="secondary" onClick={() => remove(index)} aria-label={`Remove ${noun} ${index + 1}`}>
                  Remove
                </button>
              </li>
            );
          })}
        </ol>
      ) : null}
      {conditions.length < max ? (
        <button type="button" className="secondary" onClick={add} aria-describedby={`${id}-${name}-about`}>
          Add {noun}
        </button>
      ) : null}
    </fieldset>
  );
}
