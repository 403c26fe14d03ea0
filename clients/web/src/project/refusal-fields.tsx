import { useEffect, useId, useRef } from 'react';
import type { Refusal } from './refusal.ts';

/**
 * How a form shows the server's refusal (refusal.ts) at its fields: each field's marks (refused or
 * not, described by its note and by the reason), the reason under the refused field or, when it
 * names none, above the form's buttons; and the focus moved to the refused field, to be fixed (a
 * fieldset: its first box). Fields are found by their `data-field`, which `marks` sets.
 */
export function useRefusalFields(refusal: Refusal | null) {
  const id = useId();
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    if (!refusal?.field) return;
    form.current?.querySelector<HTMLElement>(`:is(input, textarea)[data-field="${refusal.field}"], fieldset[data-field="${refusal.field}"] input`)?.focus();
  }, [refusal]);

  const errorId = (field: string) => `${id}-${field}-error`;
  /** A field's attributes: `about` is the id of its note, if it has one. */
  const marks = (field: string, about?: string) => {
    const refused = refusal?.field === field;
    const describedBy = [about, refused ? errorId(field) : undefined].filter(Boolean).join(' ');
    return { 'data-field': field, ...(refused ? { 'aria-invalid': true as const } : {}), ...(describedBy ? { 'aria-describedby': describedBy } : {}) };
  };
  const fieldError = (field: string) =>
    refusal?.field === field ? (
      <p id={errorId(field)} className="error field-error">
        {refusal.reason}
      </p>
    ) : null;
  const formError =
    refusal && refusal.field === null ? (
      <p className="error" role="alert">
        {refusal.reason}
      </p>
    ) : null;
  return { form, marks, fieldError, formError };
}
