import type { LoupeClient } from '@loupe/client';
import type { WebhookEventType } from '@loupe/shared';
import { DeliveriesTable } from './DeliveriesTable.tsx';
import type { Webhook } from './webhook-queries.ts';
import { EVENT_LABELS } from './WebhookForm.tsx';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export type WebhookCardActions = {
  busy: boolean;
  failure: string | undefined;
  onEdit: () => void;
  onTest: () => void;
  onSetEnabled: (enabled: boolean) => void;
  onRotate: () => void;
  onDelete: () => void;
  onNotice: (text: string) => void;
};

/** A webhook: where it sends, what, whether it is enabled (and why not), its actions and its deliveries. */
export function WebhookCard({ client, session, webhook, actions }: { client: LoupeClient; session: number; webhook: Webhook; actions: WebhookCardActions }) {
  const titleId = `webhook-${webhook.id}-title`;
  const url = webhook.url;
  const disabledNote = `webhook-${webhook.id}-disabled`;
  const whyDisabled = webhook.enabled ? {} : { 'aria-describedby': disabledNote };
  return (
    <li>
      <article className="webhook-card panel" aria-labelledby={titleId}>
        <div className="webhook-head">
          <h2 id={titleId} className="url">
            {url}
          </h2>
          <span className={`state ${webhook.enabled ? 'webhook-enabled' : 'webhook-disabled'}`}>{webhook.enabled ? 'Enabled' : 'Disabled'}</span>
        </div>
        {webhook.description ? <p className="webhook-description">{webhook.description}</p> : null}
        {webhook.enabled ? null : (
          <p id={disabledNote} className={webhook.disabled_reason ? 'notice' : 'muted'}>
            {webhook.disabled_reason ? `Loupe disabled it: ${webhook.disabled_reason}. ` : null}
            Nothing is sent to it while it is disabled: enable it to send a test or retry a delivery.
          </p>
        )}
        <p className="webhook-events">
          Events:{' '}
          {webhook.events.includes('*')
            ? 'all of them'
            : webhook.events.map((type, n) => (
                <span key={type}>
                  {n ? ', ' : null}
                  <abbr title={EVENT_LABELS[type as WebhookEventType]}>
                    <code>{type}</code>
                  </abbr>
                </span>
              ))}
          {' · '}created <time dateTime={webhook.created_at}>{dateFormat.format(new Date(webhook.created_at))}</time>
        </p>
        <div className="webhook-actions">
          <button type="button" onClick={actions.onTest} disabled={actions.busy || !webhook.enabled} aria-label={`Send test to ${url}`} {...whyDisabled}>
            Send test
          </button>
          <button type="button" className="secondary" onClick={() => actions.onSetEnabled(!webhook.enabled)} disabled={actions.busy} aria-label={`${webhook.enabled ? 'Disable' : 'Enable'} ${url}`}>
            {webhook.enabled ? 'Disable' : 'Enable'}
          </button>
          <button type="button" className="secondary" onClick={actions.onEdit} disabled={actions.busy} aria-haspopup="dialog" aria-label={`Edit ${url}`}>
            Edit
          </button>
          <button type="button" className="secondary" onClick={actions.onRotate} disabled={actions.busy} aria-haspopup="dialog" aria-label={`Rotate secret of ${url}`}>
            Rotate secret
          </button>
          <button type="button" className="secondary danger-text" onClick={actions.onDelete} disabled={actions.busy} aria-haspopup="dialog" aria-label={`Delete ${url}`}>
            Delete
          </button>
        </div>
        {actions.failure ? (
          <p className="error" role="alert">
            {actions.failure}
          </p>
        ) : null}
        <h3 className="deliveries-title">Deliveries</h3>
        <DeliveriesTable client={client} session={session} webhook={webhook} whyDisabled={whyDisabled} onNotice={actions.onNotice} />
      </article>
    </li>
  );
}
