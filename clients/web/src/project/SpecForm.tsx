import type { LoupeClient } from '@loupe/client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { projectsQuery } from '../api.ts';
import { RubricInput, toRubricField } from '../annotate/RubricForm.tsx';
import type { FieldInput } from '../annotate/rubric-fields.ts';
import { projectSpecsQuery } from './project-queries.ts';
import { ReadOnlyNote, writeControl, type Access } from './ReadOnlyNote.tsx';
import { refusalOf, type Refusal } from './refusal.ts';
import { emptyDraft, schemaOf, SPEC_KINDS, type Draft, type SpecKind } from './spec-kinds.ts';
import '../annotate/annotate.css';

const SPEC_FIELDS = ['name', 'description', 'field_schema'] as const;

/**
 * A new annotation spec: a name, a description, and its field built from a kind (a scale, yes or
 * no, …) whose JSON Schema is written as the form is filled — or typed by hand, the advanced kind.
 * Beside it, the field as annotators will see it.
 */
export function SpecForm({ client, session, projectId, access }: { client: LoupeClient; session: number; projectId: string; access: Access }) {
  const queryClient = useQueryClient();
  const id = useId();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [draft, setDraft] = useState<Draft>(emptyDraft);
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [stored, setStored] = useState<string>();
  const inputs = useRef(new Map<string, HTMLElement | null>());
  const built = useMemo(() => schemaOf(draft), [draft]);
  // The schema box shows what the builder writes; in the advanced kind, what was typed.
  const schemaText = draft.kind === 'json' ? draft.schema : 'schema' in built ? JSON.stringify(built.schema, null, 2) : '';

  const create = useMutation({
    mutationFn: (fieldSchema: Record<string, unknown>) =>
      client.annotationSpecs.create.mutate({ project_id: projectId, name, description: description.trim() ? description : null, field_schema: fieldSchema }),
    onSuccess: (answer) => {
      setStored(`Stored annotation spec ${answer.name} (${answer.ref}).`);
      setName('');
      setDescription('');
      setDraft(emptyDraft());
      return Promise.all([
        queryClient.invalidateQueries({ queryKey: projectSpecsQuery(client, session, projectId).queryKey }),
        // The first write creates the project.
        queryClient.invalidateQueries({ queryKey: projectsQuery(client, session).queryKey }),
      ]);
    },
    onError: (error) => setRefusal(refusalOf(error, SPEC_FIELDS)),
  });

  // A refused field takes the focus, to be fixed.
  useEffect(() => {
    if (refusal?.field) inputs.current.get(refusal.field)?.focus();
  }, [refusal]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setRefusal(null);
    setStored(undefined);
    if ('problem' in built) {
      const { field, reason } = built.problem;
      setRefusal({ field: field === 'schema' ? 'field_schema' : field, reason });
      return;
    }
    create.mutate(built.schema);
  };

  const change = (changes: Partial<Draft>) => setDraft((current) => ({ ...current, ...changes }));
  const chooseKind = (kind: SpecKind) =>
    // The advanced kind starts from the schema built so far, to be edited further.
    change(kind === 'json' && draft.kind !== 'json' ? { kind, schema: schemaText } : { kind });

  const errorId = (field: string) => `${id}-${field}-error`;
  const described = (field: string, hint?: string) => {
    const ids = [hint, refusal?.field === field ? errorId(field) : undefined, access.writable || !access.reason ? undefined : access.noteId].filter(Boolean);
    return ids.length ? ids.join(' ') : undefined;
  };
  const fieldProps = (field: string, hint?: string) => ({
    id: `${id}-${field}`,
    ref: (element: HTMLElement | null) => void inputs.current.set(field, element),
    disabled: !access.writable,
    'aria-describedby': described(field, hint),
    ...(refusal?.field === field ? { 'aria-invalid': true as const } : {}),
  });
  const fieldError = (field: string) =>
    refusal?.field === field ? (
      <p id={errorId(field)} className="error field-error">
        {refusal.reason}
      </p>
    ) : null;
  /** A one-line input of the draft, with its label (and a hint under it). */
  const draftInput = (field: 'min' | 'max' | 'minLabel' | 'maxLabel' | 'maxLength', label: string, extra: { numeric?: boolean; hint?: ReactNode } = {}) => (
    <div className="field">
      <label htmlFor={`${id}-${field}`}>{label}</label>
      <input
        {...fieldProps(field, extra.hint ? `${id}-${field}-hint` : undefined)}
        value={draft[field]}
        onChange={(event) => change({ [field]: event.target.value })}
        autoComplete="off"
        inputMode={extra.numeric ? (draft.kind === 'number' && !draft.integer ? 'decimal' : 'numeric') : undefined}
      />
      {extra.hint ? (
        <p id={`${id}-${field}-hint`} className="field-about">
          {extra.hint}
        </p>
      ) : null}
      {fieldError(field)}
    </div>
  );

  return (
    <div className="spec-form panel">
      <form className="spec-builder-form" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
        <h3 id={`${id}-title`}>New annotation spec</h3>
        <ReadOnlyNote access={access} />
        <div className="field">
          <label htmlFor={`${id}-name`}>Spec name</label>
          <input {...fieldProps('name', `${id}-name-hint`)} value={name} onChange={(event) => setName(event.target.value)} autoComplete="off" />
          <p id={`${id}-name-hint`} className="field-about">
            Letters, digits, <code>.</code>, <code>_</code> and <code>-</code>; up to 128.
          </p>
          {fieldError('name')}
        </div>
        <div className="field">
          <label htmlFor={`${id}-description`}>Spec description</label>
          <input {...fieldProps('description')} value={description} onChange={(event) => setDescription(event.target.value)} autoComplete="off" />
          {fieldError('description')}
        </div>
        <div className="field">
          <label htmlFor={`${id}-kind`}>Kind of field</label>
          <select {...fieldProps('kind')} value={draft.kind} onChange={(event) => chooseKind(event.target.value as SpecKind)}>
            {SPEC_KINDS.map(({ kind, label }) => (
              <option key={kind} value={kind}>
                {label}
              </option>
            ))}
          </select>
        </div>
        {draft.kind === 'scale' ? (
          <>
            <div className="field-row">
              {draftInput('min', 'Lowest point', { numeric: true })}
              {draftInput('max', 'Highest point', { numeric: true })}
            </div>
            <div className="field-row">
              {draftInput('minLabel', 'Words for the lowest point (optional)', { hint: 'Such as “Not at all”.' })}
              {draftInput('maxLabel', 'Words for the highest point (optional)', { hint: 'Such as “Completely”.' })}
            </div>
          </>
        ) : draft.kind === 'choice' || draft.kind === 'multi' ? (
          <div className="field">
            <label htmlFor={`${id}-options`}>Options, one a line</label>
            <textarea {...fieldProps('options', `${id}-options-hint`)} rows={4} value={draft.options} onChange={(event) => change({ options: event.target.value })} />
            <p id={`${id}-options-hint`} className="field-about">
              {draft.kind === 'choice' ? 'Annotators pick one.' : 'Annotators tick any number of them, none included.'} Keys 1–9 pick the first nine.
            </p>
            {fieldError('options')}
          </div>
        ) : draft.kind === 'text' ? (
          draftInput('maxLength', 'Longest answer in characters (optional)', { numeric: true })
        ) : draft.kind === 'number' ? (
          <>
            <div className="field-row">
              {draftInput('min', 'Least value (optional)', { numeric: true })}
              {draftInput('max', 'Greatest value (optional)', { numeric: true })}
            </div>
            <div className="field">
              <label className="check">
                <input type="checkbox" checked={draft.integer} onChange={(event) => change({ integer: event.target.checked })} disabled={!access.writable} />
                Whole numbers only
              </label>
            </div>
          </>
        ) : null}
        <div className="field">
          <label htmlFor={`${id}-field_schema`}>JSON Schema</label>
          <textarea
            {...fieldProps('field_schema', `${id}-schema-hint`)}
            className="code-input"
            rows={6}
            spellCheck={false}
            value={schemaText}
            // Typing here writes a schema by hand: the advanced kind.
            onChange={(event) => change({ kind: 'json', schema: event.target.value })}
          />
          <p id={`${id}-schema-hint`} className="field-about">
            {draft.kind === 'json' ? (
              <>
                Written by hand. For example <code>{'{"type": "integer", "minimum": 1, "maximum": 5}'}</code> or <code>{'{"enum": ["good", "bad"]}'}</code>.
              </>
            ) : (
              'Written from the choices above. Edit it to write your own (the kind becomes JSON Schema).'
            )}
          </p>
          {fieldError('field_schema')}
        </div>
        {refusal && refusal.field === null ? (
          <p className="error" role="alert">
            {refusal.reason}
          </p>
        ) : null}
        <div className="actions">
          <button type="submit" {...writeControl(access, create.isPending)}>
            Create spec
          </button>
        </div>
        <div role="status">{stored ? <p className="notice">{stored}</p> : null}</div>
      </form>
      <SpecPreview id={`${id}-preview`} name={name} description={description} schema={'schema' in built ? built.schema : null} />
    </div>
  );
}

/** The field as annotators will see it: answering it here stores nothing. */
function SpecPreview({ id, name, description, schema }: { id: string; name: string; description: string; schema: Record<string, unknown> | null }) {
  const [input, setInput] = useState<FieldInput>();
  const key = JSON.stringify(schema);
  // A new schema starts the preview afresh: an answer to the old one may not fit it.
  const [shownKey, setShownKey] = useState(key);
  if (shownKey !== key) {
    setShownKey(key);
    setInput(undefined);
  }
  const field = useMemo(() => {
    if (!schema) return null;
    try {
      return toRubricField({ ref: 'preview', name: name.trim() || 'Your field', description: description.trim() || null, field_schema: schema });
    } catch {
      return null; // a hand-written schema the browser's validator cannot read: the server says why on create
    }
  }, [schema, name, description]);
  return (
    <section className="spec-preview" aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Preview</h4>
      <p className="field-about">As annotators will see it (nothing here is stored).</p>
      {field ? <RubricInput id={id} field={field} input={input} error={undefined} onInput={setInput} /> : <p className="muted">Complete the field to preview it.</p>}
    </section>
  );
}
