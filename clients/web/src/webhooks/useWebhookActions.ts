import type { LoupeClient } from '@loupe/client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf } from '../api.ts';
import { refusalOf, type Refusal } from '../project/refusal.ts';
import type { ShownSecret } from './SecretPanel.tsx';
import { deliveriesKey, webhooksKey, type Webhook, type WebhookFields } from './webhook-queries.ts';
import { WEBHOOK_FIELDS } from './WebhookForm.tsx';

/** What the webhooks page does: each write as a mutation, and what it leaves to show. */
export function useWebhookActions({ client, session, projectId }: { client: LoupeClient; session: number; projectId: string }) {
  const queryClient = useQueryClient();
  const listKey = webhooksKey(session, projectId);
  const [notice, setNotice] = useState<string>();
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [secret, setSecret] = useState<ShownSecret | null>(null);
  // The form, open on a new webhook (null) or on one to edit.
  const [editing, setEditing] = useState<{ webhook: Webhook | null } | null>(null);
  // A failed action on a webhook, shown on its card.
  const [failure, setFailure] = useState<{ webhookId: string; reason: string } | null>(null);
  const failed = (webhook: Webhook) => (error: unknown) => setFailure({ webhookId: webhook.id, reason: messageOf(error) });
  const renewList = () => queryClient.invalidateQueries({ queryKey: listKey });
  const renewDeliveries = (webhook: Webhook) => queryClient.invalidateQueries({ queryKey: deliveriesKey(session, projectId, webhook.id) });

  const save = useMutation({
    mutationFn: async ({ webhook, fields }: { webhook: Webhook | null; fields: WebhookFields }) =>
      webhook
        ? { webhook: (await client.webhooks.update.mutate({ id: webhook.id, project_id: projectId, ...fields })).webhook, secret: null }
        : client.webhooks.create.mutate({ project_id: projectId, ...fields }),
    onMutate: () => setRefusal(null),
    onSuccess: async ({ webhook, secret: made }) => {
      // The form closes as a new secret shows, in one render (the page orders their focus).
      setEditing(null);
      if (made) setSecret({ webhookId: webhook.id, url: webhook.url, secret: made, previousExpiresAt: null });
      setNotice(made ? `Created the webhook to ${webhook.url}.` : `Saved the webhook to ${webhook.url}.`);
      await renewList();
    },
    onError: (error) => setRefusal(refusalOf(error, WEBHOOK_FIELDS)),
  });

  const setEnabled = useMutation({
    mutationFn: ({ webhook, enabled }: { webhook: Webhook; enabled: boolean }) => client.webhooks.update.mutate({ id: webhook.id, project_id: projectId, enabled }),
    onMutate: () => setFailure(null),
    onSuccess: ({ webhook }) => setNotice(webhook.enabled ? `Enabled the webhook to ${webhook.url}.` : `Disabled the webhook to ${webhook.url}: nothing is sent to it until it is enabled again.`),
    onError: (error, { webhook }) => failed(webhook)(error),
    // Disabling ends its pending deliveries.
    onSettled: (_answer, _error, { webhook }) => Promise.all([renewList(), renewDeliveries(webhook)]),
  });

  const rotate = useMutation({
    mutationFn: (webhook: Webhook) => client.webhooks.rotateSecret.mutate({ id: webhook.id, project_id: projectId }),
    onMutate: () => setFailure(null),
    onSuccess: (answer, webhook) => {
      setSecret({ webhookId: webhook.id, url: webhook.url, secret: answer.secret, previousExpiresAt: answer.previous_secret_expires_at });
      setNotice(`Made a new signing secret for ${webhook.url}.`);
    },
    onError: (error, webhook) => failed(webhook)(error),
  });

  const test = useMutation({
    mutationFn: (webhook: Webhook) => client.webhooks.test.mutate({ id: webhook.id, project_id: projectId }),
    onMutate: () => setFailure(null),
    onSuccess: (_answer, webhook) => setNotice(`Sending a test event to ${webhook.url}.`),
    onError: (error, webhook) => failed(webhook)(error),
    onSettled: (_answer, _error, webhook) => renewDeliveries(webhook),
  });

  const remove = useMutation({
    mutationFn: (webhook: Webhook) => client.webhooks.delete.mutate({ id: webhook.id, project_id: projectId }),
    onMutate: () => setFailure(null),
    onSuccess: async (_answer, webhook) => {
      setNotice(`Deleted the webhook to ${webhook.url}.`);
      if (secret?.webhookId === webhook.id) setSecret(null);
      queryClient.setQueryData(listKey, (list: Webhook[] | undefined) => list?.filter((other) => other.id !== webhook.id));
      await renewList();
    },
    onError: (error, webhook) => failed(webhook)(error),
  });

  const openForm = (webhook: Webhook | null) => {
    save.reset();
    setRefusal(null);
    setEditing({ webhook });
  };

  return { notice, refusal, secret, failure, editing, openForm, closeForm: () => setEditing(null), save, setEnabled, rotate, test, remove, dismissSecret: () => setSecret(null), setNotice };
}
