import type { LoupeClient } from '@loupe/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { messageOf, projectsQuery } from '../api.ts';
import { projectSpecsQuery } from './project-queries.ts';
import { ReadOnlyNote, writeControl, type Access } from './ReadOnlyNote.tsx';
import { refusalOf, type Refusal } from './refusal.ts';
import { SpecLabel } from './SpecLabel.tsx';

const SPEC_FIELDS = ['name', 'description', 'field_schema'] as const;
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** The project's annotation specs, and a form that stores a new one from a JSON Schema. */
export function SpecSection({ client, session, projectId, access }: { client: LoupeClient; session: number; projectId: string; access: Access }) {
  const specs = useQuery(projectSpecsQuery(client, session, projectId));
  return (
    <section className="project-section" aria-labelledby="specs-title">
      <h2 id="specs-title">Annotation specs</h2>
      <p className="muted">The fields of a queue's rubric: each one a JSON Schema. The same name and content always give the same ref.</p>
      {specs.isPending ? (
        <p>Loading…</p>
      ) : specs.isError ? (
        <p className="error" role="alert">
          {messageOf(specs.error)}
        </p>
      ) : specs.data.length ? (
        <ul className="spec-list">
          {specs.data.map((spec) => (
            <li key={spec.ref}>
              <details>
                <summary>
                  <SpecLabel spec={spec} />
                  {spec.description ? <span className="muted"> — {spec.description}</span> : null}
                </summary>
                <p className="spec-meta">
                  <code>{spec.ref}</code> · created <time dateTime={spec.created_at}>{dateFormat.format(new Date(spec.created_at))}</time>
                </p>
                <pre className="schema">{JSON.stringify(spec.field_schema, null, 2)}</pre>
              </details>
            </li>
          ))}
        </ul>
      ) : (
        <p>No annotation specs yet.</p>
      )}
      <SpecForm client={client} session={session} projectId={projectId} access={access} />
    </section>
  );
}

function SpecForm({ client, session, projectId, access }: { client: LoupeClient; session: number; projectId: string; access: Access }) {
  const queryClient = useQueryClient();
  const id = useId();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [schema, setSchema] = useState('');
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [stored, setStored] = useState<string>();
  const inputs = useRef(new Map<string, HTMLElement | null>());

  const create = useMutation({
    mutationFn: (fieldSchema: Record<string, unknown>) =>
      client.annotationSpecs.create.mutate({ project_id: projectId, name, description: description.trim() ? description : null, field_schema: fieldSchema }),
    onSuccess: (answer) => {
      setStored(`Stored annotation spec ${answer.name} (${answer.ref}).`);
      setName('');
      setDescription('');
      setSchema('');
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
    let parsed: unknown;
    try {
      parsed = JSON.parse(schema);
    } catch {
      setRefusal({ field: 'field_schema', reason: 'The JSON Schema is not valid JSON.' });
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      setRefusal({ field: 'field_schema', reason: 'The JSON Schema must be a JSON object, such as {"type": "boolean"}.' });
      return;
    }
    create.mutate(parsed as Record<string, unknown>);
  };

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

  return (
    <form className="spec-form panel" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
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
        <label htmlFor={`${id}-field_schema`}>JSON Schema</label>
        <textarea
          {...fieldProps('field_schema', `${id}-schema-hint`)}
          className="code-input"
          rows={6}
          spellCheck={false}
          value={schema}
          onChange={(event) => setSchema(event.target.value)}
        />
        <p id={`${id}-schema-hint`} className="field-about">
          For example <code>{'{"type": "integer", "minimum": 1, "maximum": 5}'}</code> or <code>{'{"enum": ["good", "bad"]}'}</code>.
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
  );
}
