import { useId, useState, type FormEvent } from 'react';
import type { ProjectMember, ProjectQueue, ProjectSpec, QueueFields } from './project-queries.ts';
import type { Refusal } from './refusal.ts';
import { useRefusalFields } from './refusal-fields.tsx';
import { AssigneePicker } from './AssigneePicker.tsx';
import { SpecLabel } from './SpecLabel.tsx';

export const QUEUE_FIELDS = ['name', 'description', 'scorer_refs', 'annotations_per_item', 'lease_seconds', 'access', 'assignees', 'overlap_coverage'] as const;
const DEFAULTS = { annotationsPerItem: '1', leaseSeconds: '900', overlapCoverage: '1' };
type Access = NonNullable<QueueFields['access']>;

/**
 * The fields an edit changed, as the queue was when the form opened: an update sends only those
 * (fields left out stay), so it does not undo someone else's change to another field.
 */
export function changedFields(queue: ProjectQueue, fields: QueueFields): Partial<QueueFields> {
  return Object.fromEntries(
    Object.entries(fields).filter(([key, value]) => JSON.stringify(value ?? null) !== JSON.stringify(queue[key as keyof QueueFields] ?? null)),
  );
}

/**
 * A queue's settings: name, description, scorer specs (chosen among the project's specs),
 * annotations per item, overlap coverage, lease, and who may work it (access and assignees, picked
 * by name among the entity's members). Creates a queue, or edits `queue` when given. The server
 * checks every value; its refusal is shown at the field it names.
 */
export function QueueForm({
  queue,
  specs,
  members,
  busy,
  refusal,
  onSubmit,
  onCancel,
}: {
  queue: ProjectQueue | null;
  specs: ProjectSpec[];
  /** The entity's members, or undefined while they are read. */
  members: ProjectMember[] | undefined;
  busy: boolean;
  refusal: Refusal | null;
  onSubmit: (fields: QueueFields) => void;
  onCancel: () => void;
}) {
  const id = useId();
  const [name, setName] = useState(queue?.name ?? '');
  const [description, setDescription] = useState(queue?.description ?? '');
  const [refs, setRefs] = useState<string[]>(queue?.scorer_refs ?? []);
  const [perItem, setPerItem] = useState(String(queue?.annotations_per_item ?? DEFAULTS.annotationsPerItem));
  const [lease, setLease] = useState(String(queue?.lease_seconds ?? DEFAULTS.leaseSeconds));
  const [coverage, setCoverage] = useState(String(queue?.overlap_coverage ?? DEFAULTS.overlapCoverage));
  const [access, setAccess] = useState<Access>(queue?.access ?? 'open');
  const [assignees, setAssignees] = useState<string[]>(queue?.assignees ?? []);

  // A ref the queue holds that the project no longer lists still shows, so that saving keeps it.
  const known = new Set(specs.map((spec) => spec.ref));
  const unknownRefs = refs.filter((ref) => !known.has(ref));

  const toggle = (ref: string, on: boolean) => setRefs((current) => (on ? [...current, ref] : current.filter((other) => other !== ref)));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit({
      name,
      description: description.trim() ? description : null,
      scorer_refs: refs,
      // An unreadable number goes to the server as is, which says what is wrong with it.
      annotations_per_item: Number(perItem),
      lease_seconds: Number(lease),
      overlap_coverage: Number(coverage),
      access,
      // In code-unit order, as the server answers them: an edit that changes nobody sends nothing.
      assignees: [...assignees].sort(),
    });
  };

  const { form, marks, fieldError, formError } = useRefusalFields(refusal);

  return (
    <form ref={form} className="queue-form" onSubmit={submit} noValidate>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input id={`${id}-name`} value={name} onChange={(event) => setName(event.target.value)} autoComplete="off" {...marks('name')} />
        {fieldError('name')}
      </div>
      <div className="field">
        <label htmlFor={`${id}-description`}>Description</label>
        <textarea id={`${id}-description`} rows={3} value={description} onChange={(event) => setDescription(event.target.value)} {...marks('description')} />
        {fieldError('description')}
      </div>
      <fieldset className="field spec-choices" {...marks('scorer_refs')}>
        <legend>Rubric fields</legend>
        {specs.length || unknownRefs.length ? (
          <ul>
            {specs.map((spec) => (
              <li key={spec.ref}>
                <label className="check">
                  <input type="checkbox" checked={refs.includes(spec.ref)} onChange={(event) => toggle(spec.ref, event.target.checked)} />
                  <SpecLabel spec={spec} />
                </label>
              </li>
            ))}
            {unknownRefs.map((ref) => (
              <li key={ref}>
                <label className="check">
                  <input type="checkbox" checked onChange={(event) => toggle(ref, event.target.checked)} />
                  <code>{ref}</code>
                </label>
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">The project has no annotation specs yet: annotators will give a note and a reaction only.</p>
        )}
        {fieldError('scorer_refs')}
      </fieldset>
      <div className="field-row">
        <div className="field">
          <label htmlFor={`${id}-per-item`}>Annotations per item</label>
          <input id={`${id}-per-item`} type="number" min={1} max={100} step={1} value={perItem} onChange={(event) => setPerItem(event.target.value)} {...marks('annotations_per_item')} />
          {fieldError('annotations_per_item')}
        </div>
        <div className="field">
          <label htmlFor={`${id}-lease`}>Lease (seconds)</label>
          <input id={`${id}-lease`} type="number" min={10} max={86_400} step={1} value={lease} onChange={(event) => setLease(event.target.value)} {...marks('lease_seconds')} />
          {fieldError('lease_seconds')}
        </div>
      </div>
      <div className="field">
        <label htmlFor={`${id}-coverage`}>Overlap coverage</label>
        <input id={`${id}-coverage`} type="number" min={0} max={1} step={0.05} value={coverage} onChange={(event) => setCoverage(event.target.value)} {...marks('overlap_coverage', `${id}-coverage-about`)} />
        <p id={`${id}-coverage-about`} className="field-about">
          The share of items (0 to 1) that get all the annotations per item; every other item gets one. 1 is every item, 0.2 a fifth of them.
        </p>
        {fieldError('overlap_coverage')}
      </div>
      <fieldset className="field access-choices" {...marks('access')}>
        <legend>Who may annotate</legend>
        <label className="check">
          <input type="radio" name={`${id}-access`} value="open" checked={access === 'open'} onChange={() => setAccess('open')} />
          Everyone who annotates in the project
        </label>
        <label className="check">
          <input type="radio" name={`${id}-access`} value="assigned" checked={access === 'assigned'} onChange={() => setAccess('assigned')} />
          Only the assignees
        </label>
        {fieldError('access')}
      </fieldset>
      <AssigneePicker members={members} chosen={assignees} onChange={setAssignees} invalid={marks('assignees')} error={fieldError('assignees')} />
      {formError}
      <div className="actions">
        <button type="submit" disabled={busy}>
          {queue ? 'Save queue' : 'Create queue'}
        </button>
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
