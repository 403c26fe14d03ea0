import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useRef, useState } from 'react';
import { canWrite, roleIn, type Role } from '../access.ts';
import { messageOf, meQuery } from '../api.ts';
import { Modal } from '../project/Modal.tsx';
import { links } from '../routes.ts';
import { SecretPanel } from '../webhooks/SecretPanel.tsx';
import { useWebhookActions } from '../webhooks/useWebhookActions.ts';
import { WebhookCard } from '../webhooks/WebhookCard.tsx';
import { webhooksQuery, type Webhook } from '../webhooks/webhook-queries.ts';
import { WebhookForm } from '../webhooks/WebhookForm.tsx';
import type { PageProps } from './page-props.ts';
import '../project/project.css';
import '../webhooks/webhooks.css';

type Confirming = { kind: 'rotate' | 'delete'; webhook: Webhook } | null;

/**
 * A project's webhooks (contract 5.13): creating (its secret shown once) and editing one, enabling and
 * disabling, rotating the secret, sending a test event, and each one's deliveries with a retry.
 * Members and admins only, as the server has it: a webhook's url may carry the receiver's
 * credentials, so viewers and annotators are told who manages them instead.
 */
export function WebhooksPage({ client, session, projectId }: PageProps) {
  const me = useQuery(meQuery(client, session));
  const role = roleIn(me.data, projectId);
  return (
    <div className="project webhooks-page">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link {...links.projects()}>Projects</Link> / <Link {...links.project(projectId)}>{projectId}</Link> / <span aria-current="page">Webhooks</span>
      </nav>
      <h1>Webhooks of {projectId}</h1>
      {me.isPending ? (
        <p>Loading…</p>
      ) : me.isError ? (
        <p className="error" role="alert">
          {messageOf(me.error)}
        </p>
      ) : canWrite(role) ? (
        <Webhooks client={client} session={session} projectId={projectId} />
      ) : (
        <p className="read-only-note">{notShownWhy(role)}</p>
      )}
    </div>
  );
}

function notShownWhy(role: Role | null): string {
  const who = 'Webhooks are managed by the members and admins of the project’s entity';
  if (role === 'viewer') return `${who}; viewers do not see them, since a webhook’s URL may carry the receiver’s credentials.`;
  if (role === 'annotator') return `${who}; annotators work the queues open to them.`;
  return 'You are not a member of this project’s entity: ask an administrator to add you.';
}

function Webhooks({ client, session, projectId }: PageProps) {
  const webhooks = useQuery(webhooksQuery(client, session, projectId));
  const actions = useWebhookActions({ client, session, projectId });
  const [confirming, setConfirming] = useState<Confirming>(null);
  const listHeading = useRef<HTMLHeadingElement>(null);

  // The dialog closes at once (focus back on the card's button); a refusal shows on the card, a
  // new secret in its panel, which takes the focus.
  const confirm = () => {
    if (!confirming) return;
    setConfirming(null);
    if (confirming.kind === 'rotate') actions.rotate.mutate(confirming.webhook);
    else actions.remove.mutate(confirming.webhook, { onSuccess: () => listHeading.current?.focus() });
  };
  const busy = [actions.setEnabled, actions.rotate, actions.test, actions.remove].some((mutation) => mutation.isPending);

  return (
    <>
      <p className="muted about">
        Loupe sends each event to the webhooks that subscribe to it, signed by the Standard Webhooks specification. A delivery that fails is tried again after 5 seconds, then after
        longer and longer waits, for about a day; a webhook failing for five days is disabled.
      </p>
      {/* Before the secret panel: closing the form gives focus back to its button, then the panel takes it. */}
      <Modal open={actions.editing !== null} onClose={actions.closeForm} labelledBy="webhook-form-title">
        <h2 id="webhook-form-title">{actions.editing?.webhook ? 'Edit webhook' : 'New webhook'}</h2>
        {actions.editing ? (
          <WebhookForm
            key={actions.editing.webhook?.id ?? 'new'}
            webhook={actions.editing.webhook}
            busy={actions.save.isPending}
            refusal={actions.refusal}
            onSubmit={(fields) => actions.save.mutate({ webhook: actions.editing?.webhook ?? null, fields })}
            onCancel={actions.closeForm}
          />
        ) : null}
      </Modal>

      <div role="status" className="notices">
        {actions.notice ? <p className="notice">{actions.notice}</p> : null}
      </div>
      {actions.secret ? (
        <SecretPanel
          shown={actions.secret}
          onDone={() => {
            actions.dismissSecret();
            listHeading.current?.focus();
          }}
        />
      ) : null}
      <div className="section-head">
        <h2 id="webhooks-title" ref={listHeading} tabIndex={-1}>
          {webhooks.data ? `${webhooks.data.length} ${webhooks.data.length === 1 ? 'webhook' : 'webhooks'}` : 'Webhooks'}
        </h2>
        <button type="button" onClick={() => actions.openForm(null)} aria-haspopup="dialog">
          New webhook
        </button>
      </div>
      {webhooks.isPending ? (
        <p>Loading…</p>
      ) : webhooks.isError ? (
        <p className="error" role="alert">
          {messageOf(webhooks.error)}
        </p>
      ) : webhooks.data.length ? (
        <ul className="webhook-list" aria-labelledby="webhooks-title">
          {webhooks.data.map((webhook) => (
            <WebhookCard
              key={webhook.id}
              client={client}
              session={session}
              webhook={webhook}
              actions={{
                busy,
                failure: actions.failure?.webhookId === webhook.id ? actions.failure.reason : undefined,
                onEdit: () => actions.openForm(webhook),
                onTest: () => actions.test.mutate(webhook),
                onSetEnabled: (enabled) => actions.setEnabled.mutate({ webhook, enabled }),
                onRotate: () => setConfirming({ kind: 'rotate', webhook }),
                onDelete: () => setConfirming({ kind: 'delete', webhook }),
                onNotice: actions.setNotice,
              }}
            />
          ))}
        </ul>
      ) : (
        <p>No webhooks yet.</p>
      )}

      <Modal open={confirming !== null} onClose={() => setConfirming(null)} labelledBy="webhook-confirm-title" className="confirm">
        <h2 id="webhook-confirm-title">{confirming?.kind === 'rotate' ? 'Rotate the signing secret?' : 'Delete this webhook?'}</h2>
        <p className="url">{confirming?.webhook.url}</p>
        <p>
          {confirming?.kind === 'rotate'
            ? 'A new secret is made and shown once. The current one keeps signing deliveries for 24 hours beside it, so that the receiver can switch over.'
            : 'Loupe stops sending to it, and its deliveries are no longer listed.'}
        </p>
        <div className="actions">
          <button type="button" className={confirming?.kind === 'delete' ? 'danger' : undefined} onClick={confirm} disabled={busy}>
            {confirming?.kind === 'rotate' ? 'Rotate secret' : 'Delete webhook'}
          </button>
          {/* Focus starts on the harmless choice. */}
          <button type="button" className="secondary" onClick={() => setConfirming(null)} data-autofocus>
            {confirming?.kind === 'rotate' ? 'Keep the current secret' : 'Keep it'}
          </button>
        </div>
      </Modal>
    </>
  );
}
