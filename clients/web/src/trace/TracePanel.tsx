import type { LoupeClient } from '@loupe/client';
import { useQuery } from '@tanstack/react-query';
import { memo, useId, useMemo } from 'react';
import { messageOf } from '../api.ts';
import { TRACE_CALLS_LIMIT, traceQuery, type TraceCallData } from './trace-queries.ts';
import { TraceTree } from './TraceTree.tsx';
import './trace.css';

const numberFormat = new Intl.NumberFormat();

/**
 * The trace of an item's call: its calls (at most TRACE_CALLS_LIMIT, by start), with the item's
 * call among them even when it starts past those — until the trace is read, the item's call alone.
 */
export function useItemTrace({ client, session, projectId, call }: { client: LoupeClient; session: number; projectId: string; call: TraceCallData | undefined }): ItemTrace {
  const trace = useQuery({ ...traceQuery(client, session, projectId, call?.trace_id ?? ''), enabled: call !== undefined });
  const read = trace.data?.calls;
  const calls = useMemo(() => {
    if (!call) return [];
    if (!read) return [call];
    return read.some((each) => each.id === call.id) ? read : [...read, call];
  }, [read, call]);
  // A failed refetch keeps what was read.
  const state = read ? 'read' : trace.isError ? 'failed' : 'reading';
  const failure = trace.isError && !read ? messageOf(trace.error) : undefined;
  return useMemo(() => ({ calls, complete: trace.data?.complete ?? true, state, failure }), [calls, trace.data, state, failure]);
}
/** What the panel shows: the same object while nothing changed, so that the panel is not drawn again. */
export type ItemTrace = { calls: TraceCallData[]; complete: boolean; state: 'reading' | 'read' | 'failed'; failure: string | undefined };

/**
 * The trace beside the item's call: a tree of its calls, the one shown selected; choosing another
 * shows that call in place of the item's (the rubric stays the item's). Memoized like the call: the
 * annotate page draws itself again at every key press, a trace of hundreds of rows need not.
 */
export const TracePanel = memo(function TracePanel({ itemTrace, itemCall, shownId, onShow }: { itemTrace: ItemTrace; itemCall: TraceCallData; shownId: string; onShow: (callId: string) => void }) {
  const id = useId();
  const { calls, complete, state, failure } = itemTrace;
  if (state === 'failed') return <p className="error trace-alone">The calls of this trace could not be read: {failure}</p>;
  if (state === 'reading') return <p className="muted trace-alone">Reading the trace…</p>;
  if (calls.length <= 1) {
    return (
      <p className="muted trace-alone">
        The only call of its trace <code>{itemCall.trace_id}</code>.
      </p>
    );
  }
  return (
    <section className="trace panel" aria-labelledby={`${id}-title`}>
      <div className="trace-head">
        <h2 id={`${id}-title`}>Trace</h2>
        <p>
          {numberFormat.format(calls.length)} calls · <code>{itemCall.trace_id}</code>
        </p>
      </div>
      {complete ? null : (
        <p className="trace-cut">
          Shows the first {numberFormat.format(TRACE_CALLS_LIMIT)} calls of this trace by start{calls.length > TRACE_CALLS_LIMIT ? ", and the item's call" : ''}: it holds more.
        </p>
      )}
      <TraceTree calls={calls} itemCallId={itemCall.id} shownId={shownId} onShow={onShow} />
    </section>
  );
});

/** Says which call is shown when it is not the item's, and goes back to the item's. */
export function OtherCallNote({ itemCall, shownCall, onBack }: { itemCall: TraceCallData; shownCall: TraceCallData; onBack: () => void }) {
  const other = shownCall.id !== itemCall.id;
  return (
    <div role="status" className="trace-shown-status">
      {other ? (
        <div className="trace-shown">
          <p>
            Showing <strong>{shownCall.op_name}</strong> (<code>{shownCall.id}</code>), another call of this trace. The rubric is about the item's call,{' '}
            <strong>{itemCall.op_name}</strong>.
          </p>
          <button type="button" className="secondary" onClick={onBack}>
            Show the item's call
          </button>
        </div>
      ) : null}
    </div>
  );
}
