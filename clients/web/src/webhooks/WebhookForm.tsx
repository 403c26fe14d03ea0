import type { WebhookEventType } from '@loupe/shared';
import { useId, useState, type FormEvent } from 'react';
import type { Refusal } from '../project/refusal.ts';
import { useRefusalFields } from '../project/refusal-fields.tsx';
import type { Webhook, WebhookFields } from './webhook-queries.ts';

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
 * A webhook's receiver url, the events it receives (all of them, or some), and a description: a
 * new one, or `webhook` when given. The server checks every value; its refusal is shown at the
 * field it names.
 */
export function WebhookForm({
  webhook,
  busy,
  refusal,
  onSubmit,
  onCancel,
}: {
  webhook: Webhook | null;
  busy: boolean;
  refusal: Refusal | null;
  onSubmit: (fields: WebhookFields) => void;
  onCancel: () => void;
}) {
  const id = useId();
  const [url, setUrl] = useState(webhook?.url ?? '');
  const [description, setDescription] = useState(webhook?.description ?? '');
  const [all, setAll] = useState(webhook ? webhook.events.includes('*') : true);
  const [chosen, setChosen] = useState<WebhookEventType[]>(webhook ? (webhook.events.filter((type) => type !== '*') as WebhookEventType[]) : []);

  const toggle = (type: WebhookEventType, on: boolean) => setChosen((current) => (on ? [...current, type] : current.filter((other) => other !== type)));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    // None chosen goes to the server as is, which says what is missing.
    onSubmit({ url: url.trim(), events: all ? ['*'] : EVENT_TYPES.filter((type) => chosen.includes(type)), description: description.trim() ? description : null });
  };

  const { form, marks, fieldError, formError } = useRefusalFields(refusal);

  return (
    <form ref={form} className="webhook-form" onSubmit={submit} noValidate>
      <div className="field">
        <label htmlFor={`${id}-url`}>Receiver URL</label>
        <input id={`${id}-url`} type="url" inputMode="url" value={url} onChange={(event) => setUrl(event.target.value)} autoComplete="off" spellCheck={false} {...marks('url', `${id}-url-about`)} />
        <p id={`${id}-url-about`} className="field-about">
          An <code>https://</code> address on the public internet. Each delivery is signed by the Standard Webhooks specification.
        </p>
        {fieldError('url')}
      </div>
      <fieldset className="field event-choices" {...marks('events')}>
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
        <textarea id={`${id}-description`} rows={2} value={description} onChange={(event) => setDescription(event.target.value)} {...marks('description')} />
        {fieldError('description')}
      </div>
      {formError}
      <div className="actions">
        <button type="submit" disabled={busy}>
          {webhook ? 'Save webhook' : 'Create webhook'}
        </button>
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
