import type { LoupeClient } from '@loupe/client';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { queueStatsQuery } from '../annotate/annotate-queries.ts';
import { messageOf } from '../api.ts';
import { queueItemsKey } from '../queue/queue-queries.ts';
import { projectCallsQuery, projectQueuesQuery, type AddAnswer } from './project-queries.ts';
import { ReadOnlyNote, writeControl, type Access } from './ReadOnlyNote.tsx';
import { ScrollTable } from '../queue/ScrollTable.tsx';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

type Added = { answer: AddAnswer; requested: number; queueName: string };

/**
 * The project's calls, page by page and narrowed by op name; the ones selected are added to a
 * queue, and the answer says what was added, what was already there and what was not found.
 */
export function CallBrowser({ client, session, projectId, access }: { client: LoupeClient; session: number; projectId: string; access: Access }) {
  const queryClient = useQueryClient();
  const id = useId();
  const [draft, setDraft] = useState('');
  const [opName, setOpName] = useState('');
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [queueId, setQueueId] = useState('');
  const [added, setAdded] = useState<Added | null>(null);
  const [failure, setFailure] = useState<string>();
  const calls = useInfiniteQuery(projectCallsQuery(client, session, projectId, opName));
  const queues = useQuery(projectQueuesQuery(client, session, projectId));
  const shown = calls.data?.pages.flatMap((page) => page.calls) ?? [];
  const allShownSelected = shown.length > 0 && shown.every((call) => selected.has(call.id));
  const someShownSelected = shown.some((call) => selected.has(call.id));
  const selectAll = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (selectAll.current) selectAll.current.indeterminate = someShownSelected && !allShownSelected;
  });

  // The chosen queue, or the first one listed once they are read.
  const queueList = queues.data ?? [];
  const target = queueList.find((queue) => queue.id === queueId) ?? queueList[0];

  const add = useMutation({
    mutationFn: ({ queueId: target, callIds }: { queueId: string; callIds: string[] }) =>
      client.annotationQueues.items.add.mutate({ project_id: projectId, queue_id: target, call_ids: callIds }),
    onSuccess: (answer, { queueId: target, callIds }) => {
      setAdded({ answer, requested: callIds.length, queueName: queueList.find((queue) => queue.id === target)?.name ?? target });
      return Promise.all([
        queryClient.invalidateQueries({ queryKey: queueStatsQuery(client, session, projectId, target).queryKey }),
        queryClient.invalidateQueries({ queryKey: queueItemsKey(session, projectId, target) }),
      ]);
    },
    onError: (error) => setFailure(messageOf(error)),
  });

  const filter = (event: FormEvent) => {
    event.preventDefault();
    setOpName(draft.trim());
    setSelected(new Set());
  };
  const clearFilter = () => {
    setDraft('');
    setOpName('');
    setSelected(new Set());
  };
  const toggle = (callId: string, on: boolean) =>
    setSelected((current) => {
      const next = new Set(current);
      if (on) next.add(callId);
      else next.delete(callId);
      return next;
    });
  const toggleAll = (on: boolean) => setSelected(on ? new Set(shown.map((call) => call.id)) : new Set());

  const submitAdd = (event: FormEvent) => {
    event.preventDefault();
    setFailure(undefined);
    setAdded(null);
    if (!target) return setFailure('Create a queue first: calls are added to a queue.');
    if (!selected.size) return setFailure('Select the calls to add first.');
    add.mutate({ queueId: target.id, callIds: [...selected] });
  };

  return (
    <section className="project-section" aria-labelledby="calls-title">
      <h2 id="calls-title">Calls</h2>
      <form className="filters" onSubmit={filter} role="search" aria-label="Filter calls">
        <div className="field">
          <label htmlFor={`${id}-op`}>Op name</label>
          <input id={`${id}-op`} value={draft} onChange={(event) => setDraft(event.target.value)} autoComplete="off" aria-describedby={`${id}-op-hint`} />
          <p id={`${id}-op-hint`} className="field-about">
            Exactly as recorded; empty shows every call.
          </p>
        </div>
        <div className="filter-actions">
          <button type="submit">Filter</button>
          {opName ? (
            <button type="button" className="secondary" onClick={clearFilter}>
              Show all calls
            </button>
          ) : null}
        </div>
      </form>

      {calls.isPending ? (
        <p>Loading…</p>
      ) : !calls.data ? null : shown.length ? (
        <>
          <div className="select-bar">
            <label className="check">
              <input ref={selectAll} type="checkbox" checked={allShownSelected} onChange={(event) => toggleAll(event.target.checked)} />
              Select all shown
            </label>
            <p className="count" aria-live="polite">
              {shown.length} {shown.length === 1 ? 'call' : 'calls'} shown{calls.hasNextPage ? ', more to load' : ''}; {selected.size} selected
            </p>
          </div>
          <ScrollTable label={opName ? `Calls of ${opName}` : 'Calls of the project'}>
            <table className="calls">
              <caption className="visually-hidden">{opName ? `Calls of ${opName}` : 'Calls of the project'}</caption>
              <thead>
                <tr>
                  <th scope="col">
                    <span className="visually-hidden">Selected</span>
                  </th>
                  <th scope="col">Op name</th>
                  <th scope="col">Call id</th>
                  <th scope="col">Started</th>
                  <th scope="col">Trace id</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((call) => (
                  <tr key={call.id} className={selected.has(call.id) ? 'selected' : undefined}>
                    <td>
                      <input type="checkbox" checked={selected.has(call.id)} onChange={(event) => toggle(call.id, event.target.checked)} aria-label={`Select ${call.id}`} />
                    </td>
                    <td>{call.op_name}</td>
                    <td>
                      <code>{call.id}</code>
                    </td>
                    <td>
                      <time dateTime={call.started_at}>{dateFormat.format(new Date(call.started_at))}</time>
                    </td>
                    <td>
                      <code>{call.trace_id}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollTable>
          {calls.hasNextPage ? (
            <button type="button" className="secondary load-more" onClick={() => void calls.fetchNextPage()} disabled={calls.isFetchingNextPage}>
              {calls.isFetchingNextPage ? 'Loading more…' : 'Load more'}
            </button>
          ) : null}
        </>
      ) : (
        <p>{opName ? `No call has the op name ${opName}.` : 'No calls in this project yet.'}</p>
      )}
      {calls.isError ? (
        <p className="error" role="alert">
          {messageOf(calls.error)}
        </p>
      ) : null}

      <form className="add-form panel" onSubmit={submitAdd} aria-labelledby={`${id}-add-title`}>
        <h3 id={`${id}-add-title`}>Add the selected calls to a queue</h3>
        <ReadOnlyNote access={access} />
        <div className="add-row">
          <div className="field">
            <label htmlFor={`${id}-queue`}>Queue</label>
            <select id={`${id}-queue`} value={target?.id ?? ''} onChange={(event) => setQueueId(event.target.value)} {...writeControl(access)} disabled={!access.writable || !queueList.length}>
              {queueList.length ? null : <option value="">No queues yet</option>}
              {queueList.map((queue) => (
                <option key={queue.id} value={queue.id}>
                  {queue.name}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" {...writeControl(access, add.isPending)}>
            Add to queue
          </button>
        </div>
        {failure ? (
          <p className="error" role="alert">
            {failure}
          </p>
        ) : null}
        <div role="status" className="add-answer">
          {added ? <AddedSummary added={added} /> : null}
        </div>
      </form>
    </section>
  );
}

function AddedSummary({ added: { answer, requested, queueName } }: { added: Added }) {
  return (
    <>
      <p>
        Added <strong>{answer.added_count}</strong> of {requested} {requested === 1 ? 'call' : 'calls'} to {queueName}.
      </p>
      <dl className="add-counts">
        <div>
          <dt>Added</dt>
          <dd>{answer.added_count}</dd>
        </div>
        <div>
          <dt>Duplicates</dt>
          <dd>{answer.duplicates.length}</dd>
        </div>
        <div>
          <dt>Missing ids</dt>
          <dd>{answer.missing_call_ids.length}</dd>
        </div>
      </dl>
      {answer.duplicates.length ? <IdList summary={`Already in the queue (${answer.duplicates.length})`} ids={answer.duplicates} /> : null}
      {answer.missing_call_ids.length ? <IdList summary={`Not found in the project (${answer.missing_call_ids.length})`} ids={answer.missing_call_ids} /> : null}
    </>
  );
}

function IdList({ summary, ids }: { summary: string; ids: string[] }) {
  return (
    <details className="id-list">
      <summary>{summary}</summary>
      <ul>
        {ids.map((callId) => (
          <li key={callId}>
            <code>{callId}</code>
          </li>
        ))}
      </ul>
    </details>
  );
}
