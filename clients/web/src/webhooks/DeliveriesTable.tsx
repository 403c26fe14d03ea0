import type { LoupeClient } from '@loupe/client';
import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf } from '../api.ts';
import { ScrollTable } from '../queue/ScrollTable.tsx';
import { DELIVERY_STATE_LABELS, retriable, shownState } from './delivery-states.ts';
import { deliveriesQuery, type Delivery, type Webhook } from './webhook-queries.ts';

// Short dates: the table holds eight columns beside each other on a desktop.
const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });

function Time({ at }: { at: string | null }) {
  return at ? <time dateTime={at}>{timeFormat.format(new Date(at))}</time> : <span className="muted">—</span>;
}

/**
 * A webhook's deliveries, newest first, a page at a time: each one's state, attempts, the
 * receiver's last status and the last error, and a button that sends a failed or retrying one
 * again now. The list follows the deliveries by polling (delivery-states.ts).
 */
export function DeliveriesTable({
  client,
  session,
  webhook,
  whyDisabled,
  onNotice,
}: {
  client: LoupeClient;
  session: number;
  webhook: Webhook;
  /** Points a retry button at the card's note while the webhook is disabled. */
  whyDisabled: { 'aria-describedby'?: string };
  onNotice: (text: string) => void;
}) {
  const queryClient = useQueryClient();
  const options = deliveriesQuery(client, session, webhook.project_id, webhook.id);
  const deliveries = useInfiniteQuery(options);
  const [failure, setFailure] = useState<string>();

  const retry = useMutation({
    mutationFn: (delivery: Delivery) => client.webhooks.deliveries.retry.mutate({ id: webhook.id, project_id: webhook.project_id, delivery_id: delivery.id }),
    onMutate: () => setFailure(undefined),
    onSuccess: (_answer, delivery) => onNotice(`Sending the ${delivery.type} event to ${webhook.url} again.`),
    onError: (error) => setFailure(messageOf(error)),
    onSettled: () => queryClient.invalidateQueries({ queryKey: options.queryKey }),
  });

  if (deliveries.isPending) return <p>Loading…</p>;
  if (deliveries.isError)
    return (
      <p className="error" role="alert">
        {messageOf(deliveries.error)}
      </p>
    );
  const shown = deliveries.data.pages.flatMap((page) => page.deliveries);
  if (!shown.length) return <p className="muted">No deliveries yet.</p>;
  return (
    <>
      {failure ? (
        <p className="error" role="alert">
          {failure}
        </p>
      ) : null}
      <ScrollTable label={`Deliveries to ${webhook.url}`}>
        <table className="deliveries">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">State</th>
              <th scope="col" className="number">
                Attempts
              </th>
              <th scope="col" className="number">
                Last status
              </th>
              <th scope="col">Last error</th>
              <th scope="col">Next attempt</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Action</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {shown.map((delivery) => {
              const state = shownState(delivery);
              return (
                <tr key={delivery.id} data-delivery={delivery.id}>
                  <th scope="row">
                    <code>{delivery.type}</code>
                    <span className="event-id">{delivery.event_id}</span>
                  </th>
                  <td>
                    <span className={`state delivery-${state}`}>{DELIVERY_STATE_LABELS[state]}</span>
                  </td>
                  <td className="number">{delivery.attempts}</td>
                  <td className="number">{delivery.last_status ?? <span className="muted">—</span>}</td>
                  <td className="last-error">{delivery.last_error ?? <span className="muted">—</span>}</td>
                  <td>
                    <Time at={delivery.state === 'pending' ? delivery.next_attempt_at : null} />
                  </td>
                  <td>
                    <Time at={delivery.created_at} />
                  </td>
                  <td>
                    {retriable(delivery) ? (
                      <button
                        type="button"
                        className="secondary"
                        onClick={() => retry.mutate(delivery)}
                        disabled={retry.isPending || !webhook.enabled}
                        aria-label={`Retry now the ${delivery.type} delivery of ${timeFormat.format(new Date(delivery.created_at))}`}
                        {...whyDisabled}
                      >
                        Retry now
                      </button>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </ScrollTable>
      {deliveries.hasNextPage ? (
        <button type="button" className="secondary load-more" onClick={() => void deliveries.fetchNextPage()} disabled={deliveries.isFetchingNextPage}>
          Show older deliveries
        </button>
      ) : null}
    </>
  );
}
