import type { LoupeClient } from '@loupe/client';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useMemo, useRef, useState, type FormEvent } from 'react';
import { queueStatsQuery } from '../annotate/annotate-queries.ts';
import { messageOf } from '../api.ts';
import { queueItemsKey } from '../queue/queue-queries.ts';
import type { CallFilter } from '@loupe/shared';
import { addMatchingCalls, type MatchingProgress } from './add-matching.ts';
import { CallFilterForm } from './CallFilterForm.tsx';
import { modelOf, requestModelOf } from '../trace/call-model.ts';
import { previewText } from './call-preview.ts';
import { projectCallsQuery, projectQueuesQuery, type AddAnswer } from './project-queries.ts';
import { ReadOnlyNote, writeControl, type Access } from './ReadOnlyNote.tsx';
import { ScrollTable } from '../queue/ScrollTable.tsx';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const numberFormat = new Intl.NumberFormat();

/** What one add (the selection) or one run over the matching calls added, from the API's answers. */
type Added = { queueName: string; requested: number; matching: boolean; added: number; duplicates: number; missing: number; duplicateIds: string[]; missingIds: string[] };

function addedFromAnswer(answer: AddAnswer, requested: number, queueName: string): Added {
  return {
    queueName,
    requested,
    matching: false,
    added: answer.added_count,
    duplicates: answer.duplicates.length,
    missing: answer.missing_call_ids.length,
    duplicateIds: answer.duplicates,
    missingIds: answer.missing_call_ids,
  };
}

/**
 * The project's calls, page by page, narrowed by a CallFilter (op name, words of their inputs and
 * output, model, exception, start time, root calls only), each with its model and a line of its
 * inputs and output. The calls selected, or every call the
 * filter matches, are added to a queue from a bar that stays in view; the answer says what was
 * added, what was already there and what was not found.
 */
export function CallBrowser({ client, session, projectId, access }: { client: LoupeClient; session: number; projectId: string; access: Access }) {
  const queryClient = useQueryClient();
  const id = useId();
  const [filter, setFilter] = useState<CallFilter>({});
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [queueId, setQueueId] = useState('');
  const [added, setAdded] = useState<Added | null>(null);
  const [matching, setMatching] = useState<(MatchingProgress & { queueName: string }) | null>(null);
  const stopMatching = useRef<AbortController | null>(null);
  const [failure, setFailure] = useState<string>();
  const calls = useInfiniteQuery(projectCallsQuery(client, session, projectId, filter));
  const queues = useQuery(projectQueuesQuery(client, session, projectId));
  const shown = calls.data?.pages.flatMap((page) => page.calls) ?? [];
  const filtered = Object.keys(filter).length > 0;
  const models = useMemo(() => modelsOf(calls.data?.pages.flatMap((page) => page.calls) ?? []), [calls.data]);
  const allShownSelected = shown.length > 0 && shown.every((call) => selected.has(call.id));
  const someShownSelected = shown.some((call) => selected.has(call.id));
  const selectAll = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (selectAll.current) selectAll.current.indeterminate = someShownSelected && !allShownSelected;
  });
  useEffect(() => () => stopMatching.current?.abort(), []);

  // The chosen queue, or the first one listed once they are read.
  const queueList = queues.data ?? [];
  const target = queueList.find((queue) => queue.id === queueId) ?? queueList[0];
  const queueName = (queue: string) => queueList.find((listed) => listed.id === queue)?.name ?? queue;
  const refreshQueue = (queue: string) =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: queueStatsQuery(client, session, projectId, queue).queryKey }),
      queryClient.invalidateQueries({ queryKey: queueItemsKey(session, projectId, queue) }),
    ]);

  const add = useMutation({
    mutationFn: ({ queueId: target, callIds }: { queueId: string; callIds: string[] }) =>
      client.annotationQueues.items.add.mutate({ project_id: projectId, queue_id: target, call_ids: callIds }),
    onSuccess: (answer, { queueId: target, callIds }) => {
      setAdded(addedFromAnswer(answer, callIds.length, queueName(target)));
      return refreshQueue(target);
    },
    onError: (error) => setFailure(messageOf(error)),
  });

  const addMatching = useMutation({
    mutationFn: ({ queueId: target, filter: matched }: { queueId: string; filter: CallFilter }) => {
      const stop = new AbortController();
      stopMatching.current = stop;
      const name = queueName(target);
      setMatching({ found: 0, added: 0, duplicates: 0, missing: 0, done: false, queueName: name });
      return addMatchingCalls(client, { projectId, queueId: target, filter: matched, signal: stop.signal, onProgress: (progress) => setMatching({ ...progress, queueName: name }) });
    },
    onSuccess: (answer, { queueId: target }) => {
      setMatching(null);
      setAdded({ queueName: queueName(target), requested: answer.found, matching: true, ...answer });
    },
    onError: (error) => setFailure(stopMatching.current?.signal.aborted ? 'Stopped: the calls counted above were added.' : messageOf(error)),
    onSettled: (_answer, _error, { queueId: target }) => refreshQueue(target),
  });
  const busy = add.isPending || addMatching.isPending;

  const applyFilter = (next: CallFilter) => {
    setFilter(next);
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

  /** The queue to add to, or the reason there is none yet. */
  const startAdding = (): string | undefined => {
    setFailure(undefined);
    setAdded(null);
    setMatching(null);
    if (!target) {
      setFailure('Create a queue first: calls are added to a queue.');
      return undefined;
    }
    return target.id;
  };
  const submitAdd = (event: FormEvent) => {
    event.preventDefault();
    const queue = startAdding();
    if (!queue) return;
    if (!selected.size) return setFailure('Select the calls to add first.');
    add.mutate({ queueId: queue, callIds: [...selected] });
  };
  const submitMatching = () => {
    const queue = startAdding();
    if (queue) addMatching.mutate({ queueId: queue, filter });
  };

  const matchingControl = writeControl(access, busy || !shown.length);
  const tableName = filtered ? 'Calls matching the filter' : 'Calls of the project';

  return (
    <section className="project-section" aria-labelledby="calls-title">
      <h2 id="calls-title">Calls</h2>
      <CallFilterForm filtered={filtered} models={models} onFilter={applyFilter} />

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
          <ScrollTable label={tableName}>
            <table className="calls">
              <caption className="visually-hidden">{tableName}</caption>
              <thead>
                <tr>
                  <th scope="col">
                    <span className="visually-hidden">Selected</span>
                  </th>
                  <th scope="col">Op name</th>
                  <th scope="col">Model</th>
                  <th scope="col">Inputs</th>
                  <th scope="col">Output</th>
                  <th scope="col">Started</th>
                  <th scope="col">Call id</th>
                  <th scope="col">Trace id</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((call) => (
                  <tr key={call.id} className={selected.has(call.id) ? 'selected' : undefined}>
                    <td>
                      <input type="checkbox" checked={selected.has(call.id)} onChange={(event) => toggle(call.id, event.target.checked)} aria-label={`Select ${call.id}`} />
                    </td>
                    <td>
                      {call.op_name}
                      {call.exception !== null ? (
                        <span className="exception-mark">
                          <span aria-hidden="true">⚠ </span>exception
                        </span>
                      ) : null}
                    </td>
                    <td>{modelOf(call.attributes) ?? <span className="muted">—</span>}</td>
                    <td className="preview">{previewText(call.inputs)}</td>
                    <td className="preview">{previewText(call.output)}</td>
                    <td>
                      <time dateTime={call.started_at}>{dateFormat.format(new Date(call.started_at))}</time>
                    </td>
                    <td>
                      <code>{call.id}</code>
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
        <p>{filtered ? 'No call matches the filter.' : 'No calls in this project yet.'}</p>
      )}
      {calls.isError ? (
        <p className="error" role="alert">
          {messageOf(calls.error)}
        </p>
      ) : null}

      <form className="add-form panel add-bar" onSubmit={submitAdd} aria-labelledby={`${id}-add-title`}>
        <h3 id={`${id}-add-title`} className="visually-hidden">
          Add calls to a queue
        </h3>
        <ReadOnlyNote access={access} />
        <div className="add-row">
          <p className="selected-count">
            <strong>{numberFormat.format(selected.size)}</strong> selected
          </p>
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
          <button type="submit" {...writeControl(access, busy)}>
            Add to queue
          </button>
          <button type="button" className="secondary" onClick={submitMatching} {...matchingControl} aria-describedby={[matchingControl['aria-describedby'], `${id}-matching-hint`].filter(Boolean).join(' ')}>
            Add all matching
          </button>
          {addMatching.isPending ? (
            <button type="button" className="secondary" onClick={() => stopMatching.current?.abort()}>
              Stop
            </button>
          ) : null}
          <p id={`${id}-matching-hint`} className="visually-hidden">
            Adds every call the filter matches, not only the ones shown.
          </p>
        </div>
        {failure ? (
          <p className="error" role="alert">
            {failure}
          </p>
        ) : null}
        <div role="status" className="add-answer">
          {matching ? <MatchingProgressLine progress={matching} /> : added ? <AddedSummary added={added} /> : null}
        </div>
      </form>
    </section>
  );
}

/** Suggestions for the model filter: the requested models of the calls shown, at most this many. */
const MODEL_SUGGESTIONS = 100;

function modelsOf(calls: { attributes: { [key: string]: unknown } | null }[]): string[] {
  const models = new Set<string>();
  for (const call of calls) {
    const model = requestModelOf(call.attributes);
    if (model) models.add(model);
    if (models.size >= MODEL_SUGGESTIONS) break;
  }
  return [...models].sort();
}

function MatchingProgressLine({ progress }: { progress: MatchingProgress & { queueName: string } }) {
  return (
    <p>
      Adding the matching calls to {progress.queueName}: {numberFormat.format(progress.found)} found, {numberFormat.format(progress.added)} added so far…
    </p>
  );
}

function AddedSummary({ added }: { added: Added }) {
  const { requested, queueName } = added;
  return (
    <>
      <p>
        Added <strong>{numberFormat.format(added.added)}</strong> of {numberFormat.format(requested)} {added.matching ? 'matching ' : ''}
        {requested === 1 ? 'call' : 'calls'} to {queueName}.
      </p>
      <dl className="add-counts">
        <div>
          <dt>Added</dt>
          <dd>{added.added}</dd>
        </div>
        <div>
          <dt>Duplicates</dt>
          <dd>{added.duplicates}</dd>
        </div>
        <div>
          <dt>Missing ids</dt>
          <dd>{added.missing}</dd>
        </div>
      </dl>
      {added.duplicates ? <IdList summary={`Already in the queue (${added.duplicates})`} ids={added.duplicateIds} /> : null}
      {added.missing ? <IdList summary={`Not found in the project (${added.missing})`} ids={added.missingIds} /> : null}
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
