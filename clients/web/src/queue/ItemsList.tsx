import type { LoupeClient } from '@loupe/client';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useEffect, useId, useMemo, useRef, useState } from 'react';
import { messageOf } from '../api.ts';
import type { QueueItem, QueueStats } from '../annotate/annotate-queries.ts';
import { Annotator } from './Annotator.tsx';
import { AssignItems } from './AssignItems.tsx';
import { ScrollTable } from './ScrollTable.tsx';
import { byCodePoint, valuesByCall, type SpecOfValues } from './annotator-values.ts';
import { queueItemsQuery, type ItemAnnotations, type ItemSort, type ItemState } from './queue-queries.ts';
import { STATE_LABELS, STATES } from './states.ts';
import { ValueText } from './ValueText.tsx';

const SORTS = {
  added: { label: 'Order added', sort: { field: 'created_at', direction: 'asc' } },
  'added-desc': { label: 'Newest added first', sort: { field: 'created_at', direction: 'desc' } },
  updated: { label: 'Recently updated first', sort: { field: 'updated_at', direction: 'desc' } },
  started: { label: 'Call started', sort: { field: 'call_started_at', direction: 'asc' } },
  op: { label: 'Op name', sort: { field: 'call_op_name', direction: 'asc' } },
} as const satisfies Record<string, { label: string; sort: ItemSort }>;
type SortKey = keyof typeof SORTS;

type Props = {
  client: LoupeClient;
  session: number;
  projectId: string;
  queueId: string;
  specs: SpecOfValues[];
  stats: QueueStats | undefined;
  meId: string | undefined;
  /** Whether the caller may assign items to people (members and admins): items can then be selected. */
  canAssign: boolean;
  onOpen: (item: QueueItem) => void;
};

/**
 * The queue's items, a page at a time ("Load more" appends the next page by cursor), narrowed by
 * state and in a chosen order; each with the person it is assigned to and every annotator's value
 * per scorer spec. Members select items to assign them to someone.
 */
export function ItemsList({ client, session, projectId, queueId, specs, stats, meId, canAssign, onOpen }: Props) {
  const [state, setState] = useState<ItemState | ''>('');
  const [sortKey, setSortKey] = useState<SortKey>('added');
  const view = useMemo(() => ({ states: state ? [state] : [], sort: SORTS[sortKey].sort }), [state, sortKey]);
  const items = useInfiniteQuery(queueItemsQuery(client, session, projectId, queueId, view));
  const stateId = useId();
  const sortId = useId();

  const shown = useMemo(() => items.data?.pages.flatMap((page) => page.items) ?? [], [items.data]);
  // After "Load more", focus moves to the first item of the new page, where reading goes on (the
  // button itself is gone after the last page).
  const body = useRef<HTMLTableSectionElement>(null);
  const [focusRow, setFocusRow] = useState<number | null>(null);
  useEffect(() => {
    if (focusRow === null || shown.length <= focusRow) return;
    body.current?.querySelectorAll<HTMLButtonElement>('button[data-open]')[focusRow]?.focus();
    setFocusRow(null);
  }, [focusRow, shown.length]);
  const loadMore = () => {
    setFocusRow(shown.length);
    void items.fetchNextPage();
  };
  const values = useMemo(() => valuesByCall(projectId, items.data?.pages.flatMap((page) => page.records) ?? [], specs), [items.data, projectId, specs]);
  const annotations = useMemo(() => new Map(items.data?.pages.flatMap((page) => page.annotations.map((a) => [a.item_id, a] as const)) ?? []), [items.data]);
  const total = stats ? (state ? stats.by_state[state] : stats.total_items) : undefined;
  // Selected item ids, in the order they were ticked; those no longer shown (another filter) drop out.
  const [selected, setSelected] = useState<string[]>([]);
  const shownIds = useMemo(() => new Set(shown.map((item) => item.id)), [shown]);
  const selectedShown = selected.filter((itemId) => shownIds.has(itemId));
  const select = (itemIds: string[], on: boolean) =>
    setSelected((current) => (on ? [...current, ...itemIds.filter((itemId) => !current.includes(itemId))] : current.filter((itemId) => !itemIds.includes(itemId))));
  const allSelected = shown.length > 0 && selectedShown.length === shown.length;

  return (
    <section aria-labelledby="items-title" className="queue-items">
      <h2 id="items-title">Items</h2>
      <div className="filters">
        <div>
          <label htmlFor={stateId}>State</label>
          <select id={stateId} value={state} onChange={(event) => setState(event.target.value as ItemState | '')}>
            <option value="">All states</option>
            {STATES.map((option) => (
              <option key={option} value={option}>
                {STATE_LABELS[option]}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={sortId}>Order</label>
          <select id={sortId} value={sortKey} onChange={(event) => setSortKey(event.target.value as SortKey)}>
            {Object.entries(SORTS).map(([key, { label }]) => (
              <option key={key} value={key}>
                {label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {items.isPending ? (
        <p>Loading the items…</p>
      ) : items.isError && !items.data ? (
        <p className="error" role="alert">{messageOf(items.error)}</p>
      ) : (
        <>
          <p className="count" role="status">
            {total === undefined ? `Showing ${shown.length} items` : `Showing ${shown.length} of ${total} items`}
          </p>
          {canAssign && shown.length ? (
            <AssignItems client={client} session={session} projectId={projectId} queueId={queueId} selected={selectedShown} onAssigned={() => setSelected([])} />
          ) : null}
          {shown.length ? (
            <ScrollTable label="Items and their values">
              <table className="items">
                <caption className="visually-hidden">Items of the queue, with every annotator's values</caption>
                <thead>
                  <tr>
                    {canAssign ? (
                      <th scope="col" className="select">
                        <input type="checkbox" aria-label="Select every item shown" checked={allSelected} onChange={(event) => select([...shownIds], event.target.checked)} />
                      </th>
                    ) : null}
                    <th scope="col" className="number">
                      <span aria-hidden="true">#</span>
                      <span className="visually-hidden">Position</span>
                    </th>
                    <th scope="col">Call</th>
                    <th scope="col">State</th>
                    <th scope="col">Assigned to</th>
                    {specs.map((spec) => (
                      <th scope="col" key={spec.ref}>
                        {spec.name}
                      </th>
                    ))}
                    <th scope="col">
                      <span className="visually-hidden">Open</span>
                    </th>
                  </tr>
                </thead>
                <tbody ref={body}>
                  {shown.map((item) => {
                    const itemValues = values.get(item.call_id);
                    return (
                      <tr key={item.id} data-call-id={item.call_id}>
                        {canAssign ? (
                          <td className="select">
                            <input
                              type="checkbox"
                              aria-label={`Select ${item.call_op_name} ${item.call_id}`}
                              checked={selectedShown.includes(item.id)}
                              onChange={(event) => select([item.id], event.target.checked)}
                            />
                          </td>
                        ) : null}
                        <td className="number">{item.position_in_queue}</td>
                        <th scope="row">
                          {item.call_op_name}
                          <code className="call-id">{item.call_id}</code>
                        </th>
                        <td>
                          <span className={`state state-${item.annotation_state}`}>{STATE_LABELS[item.annotation_state]}</span>
                          <AnnotationCount counts={annotations.get(item.id)} />
                        </td>
                        <td data-assigned>{item.assigned_user_id ? <Annotator userId={item.assigned_user_id} meId={meId} /> : <span className="muted">anyone</span>}</td>
                        {specs.map((spec) => {
                          const byWho = itemValues?.bySpec.get(spec.ref);
                          return (
                            <td key={spec.ref} data-spec={spec.name}>
                              {byWho?.size ? (
                                <ul className="cell-values">
                                  {[...byWho].sort(([a], [b]) => byCodePoint(a, b)).map(([who, value]) => (
                                    <li key={who}>
                                      <Annotator userId={who} meId={meId} />: <ValueText value={value} />
                                    </li>
                                  ))}
                                </ul>
                              ) : (
                                <span className="muted">none</span>
                              )}
                            </td>
                          );
                        })}
                        <td>
                          <button type="button" className="secondary" data-open onClick={() => onOpen(item)} aria-label={`Open ${item.call_op_name} ${item.call_id}`}>
                            Open
                          </button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </ScrollTable>
          ) : (
            <p className="muted">{state ? `No item is ${STATE_LABELS[state].toLowerCase()}.` : 'This queue has no items yet.'}</p>
          )}
          {items.hasNextPage ? (
            <button type="button" className="load-more" onClick={loadMore} disabled={items.isFetchingNextPage}>
              {items.isFetchingNextPage ? 'Loading…' : 'Load more'}
            </button>
          ) : null}
          {items.isFetchNextPageError ? (
            <p className="error" role="alert">{messageOf(items.error)}</p>
          ) : null}
        </>
      )}
    </section>
  );
}

/**
 * "1 of 2": how many of the annotations it needs an item has (annotators who completed or skipped
 * it), shown when an item needs more than one.
 */
function AnnotationCount({ counts }: { counts: ItemAnnotations | undefined }) {
  if (!counts || counts.annotations_required < 2) return null;
  const done = counts.annotations_done >= counts.annotations_required;
  return (
    <span className={`item-annotations${done ? ' done' : ''}`}>
      {counts.annotations_done} of {counts.annotations_required}
      <span className="visually-hidden"> annotations</span>
    </span>
  );
}
