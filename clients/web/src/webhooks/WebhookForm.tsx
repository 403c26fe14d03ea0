import type { WebhookEventType } from '@loupe/shared';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { Refusal } from '../project/refusal.ts';
import type { WebhookFields } from './webhook-queries.ts';

export const WEBHOOK_FIELDS = ['url', 'events', 'description'] as const;

/** The events a webhook may receive, in the words of the page (a new type does not compile until it is here). */
export const EVENT_LABELS: Record<WebhookEventType, string> = {
  'feedback.created': 'Feedback was created',
  'annotation_queue.item.progress': 'An annotator started, completed or skipped an item',
  'annotation_queue.completed': 'A queue has no unfinished item left',
  'annotation_queue.items.added': 'Items were added to a queue, by hand or by a rule',
};
const EVENT_TYPES = Object.keys(EVENT_LABELS) as WebhookEventType[];

/**
 * A new webhook: its receiver's url, the events it receives (all of them, or some), and a
 * description. The server checks every value; its refusal is shown at the field it names.
 */
export function WebhookForm({ busy, refusal, onSubmit, onCancel }: { busy: boolean; refusal: Refusal | null; onSubmit: (fields: WebhookFields) => void; onCancel: () => void }) {
  const id = useId();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [all, setAll] = useState(true);
  const [chosen, setChosen] = useState<WebhookEventType[]>([]);

  const toggle = (type: WebhookEventType, on: boolean) => setChosen((current) => (on ? [...current, type] : current.filter((other) => other !== type)));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    // None chosen goes to the server as is, which says what is missing.
    onSubmit({ url: url.trim(), events: all ? ['*'] : EVENT_TYPES.filter((type) => chosen.includes(type)), description: description.trim() ? description : null });
  };

  // A refused field takes the focus, to be fixed (the events: their first box).
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    if (!refusal?.field) return;
    form.current?.querySelector<HTMLElement>(`:is(input, textarea)[data-field="${refusal.field}"], fieldset[data-field="${refusal.field}"] input`)?.focus();
  }, [refusal]);

  const errorId = (field: string) => `${id}-${field}-error`;
  /** A field's marks: refused or not, described by its note (`about`) and its refusal. */
  const invalid = (field: string, about?: string) => {
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

  return (
    <form ref={form} className="webhook-form" onSubmit={submit} noValidate>
      <div className="field">
        <label htmlFor={`${id}-url`}>Receiver URL</label>
        <input id={`${id}-url`} type="url" inputMode="url" value={url} onChange={(event) => setUrl(event.target.value)} autoComplete="off" spellCheck={false} {...invalid('url', `${id}-url-about`)} />
        <p id={`${id}-url-about`} className="field-about">
          An <code>https://</code> address on the public internet. Each delivery is signed by the Standard Webhooks specification.
        </p>
        {fieldError('url')}
      </div>
      <fieldset className="field event-choices" {...invalid('events')}>
        <legend>Events</legend>
        <ul>
          <li>
            <label className="check">
              <input type="checkbox" checked={all} onChange={(event) => setAll(event.target.checked)} />
              All events, including those added later
            </label>
          </li>
          {EVENT_TYPES.map((type) => (
            <li key={type}>
              <label className="check">
                <input type="checkbox" checked={all || chosen.includes(type)} disabled={all} onChange={(event) => toggle(type, event.target.checked)} />
                <span>
                  {EVENT_LABELS[type]} <code className="event-type">{type}</code>
                </span>
              </label>
            </li>
          ))}
        </ul>
        {fieldError('events')}
      </fieldset>
      <div className="field">
        <label htmlFor={`${id}-description`}>Description</label>
        <textarea id={`${id}-description`} rows={2} value={description} onChange={(event) => setDescription(event.target.value)} {...invalid('description')} />
        {fieldError('description')}
      </div>
      {refusal && refusal.field === null ? (
        <p className="error" role="alert">
          {refusal.reason}
        </p>
      ) : null}
      <div className="actions">
        <button type="submit" disabled={busy}>
          Create webhook
        </button>
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
