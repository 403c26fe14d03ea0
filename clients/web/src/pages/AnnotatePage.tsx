import { Link } from '@tanstack/react-router';
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { roleIn } from '../access.ts';
import { messageOf, meQuery, statusOf } from '../api.ts';
import type { QueueStats } from '../annotate/annotate-queries.ts';
import { CallView } from '../annotate/CallView.tsx';
import { LeaseCountdown } from '../annotate/LeaseCountdown.tsx';
import { RubricForm } from '../annotate/RubricForm.tsx';
import { ShortcutsDialog } from '../annotate/ShortcutsDialog.tsx';
import { useShortcuts } from '../annotate/shortcuts.ts';
import { useAnnotationSession, type Finished } from '../annotate/useAnnotationSession.ts';
import type { LiveState } from '../live/useQueueEvents.ts';
import { links } from '../routes.ts';
import { OtherCallNote, TracePanel, useItemTrace } from '../trace/TracePanel.tsx';
import type { QueuePageProps } from './page-props.ts';
import '../annotate/annotate.css';

/**
 * Annotating a queue: claim an item, read its call, fill in the rubric, submit and go on. The
 * session (what is read, where the annotator is, the writes) is `useAnnotationSession`; this page
 * renders it, and owns the focus and the keyboard.
 */
export function AnnotatePage(props: QueuePageProps) {
  const { projectId, queueId } = props;
  const annotation = useAnnotationSession(props);
  // An annotator's way back is My queues: the project and queue pages are not theirs.
  const me = useQuery(meQuery(props.client, props.session));
  const annotator = roleIn(me.data, projectId) === 'annotator';
  const { queue, gone, stats, specs, fields, writable, live, phase, held, shownItem, call, form, errors, failure, notice, finished, reopened, busy, completedByMe } = annotation;
  const [helpOpen, setHelpOpen] = useState(false);
  const noteRef = useRef<HTMLTextAreaElement>(null);
  const startRef = useRef<HTMLButtonElement>(null);
  const headingId = useId();
  const focusHeading = () => document.getElementById(headingId)?.focus();

  // The item's trace; a call of it chosen in the tree is shown in place of the item's call (for
  // that item only), while the rubric stays the item's.
  const itemCall = call.data;
  const itemTrace = useItemTrace({ client: props.client, session: props.session, projectId, call: itemCall });
  const [chosen, setChosen] = useState<{ itemId: string; callId: string } | null>(null);
  const shownCall = (chosen && chosen.itemId === shownItem?.id && itemTrace.calls.find((each) => each.id === chosen.callId)) || itemCall;
  const shownItemId = shownItem?.id;
  const showCall = useCallback(
    (callId: string) => {
      if (shownItemId) setChosen({ itemId: shownItemId, callId });
    },
    [shownItemId],
  );
  const backToItemCall = () => {
    setChosen(null);
    // The note and its button go away: the focus goes to the item's call.
    requestAnimationFrame(focusHeading);
  };

  // Focus follows the work: the Start button when the page opens, the call's heading when an item
  // appears (screen readers announce it, and digit keys then go to the first unanswered field).
  const startShown = phase === 'start' && !reopened && queue.isSuccess && specs.isSuccess && writable;
  useEffect(() => {
    if (startShown) startRef.current?.focus();
  }, [startShown]);
  const shownId = shownItem?.id;
  const callShown = call.isSuccess;
  useEffect(() => {
    if (shownId && callShown) document.getElementById(headingId)?.focus();
  }, [shownId, callShown, headingId]);

  // `?` works from the start screen on; the other keys act on an item shown (see the session's handlers).
  useShortcuts(!gone, {
    submit: annotation.submit,
    pick: annotation.pick,
    skip: annotation.skip,
    previous: annotation.previous,
    note: () => noteRef.current?.focus(),
    help: () => setHelpOpen(true),
    leaveField: focusHeading,
  });

  if (gone) return <QueueGone projectId={projectId} annotator={annotator} />;
  // A failed refetch keeps what was read: only a queue never read is an error of the page.
  if (queue.isError && !queue.data && statusOf(queue.error) === 403) return <QueueRefused reason={messageOf(queue.error)} />;
  if (queue.isError && !queue.data) return <p className="error" role="alert">{messageOf(queue.error)}</p>;
  if (queue.isPending || specs.isPending) return <p>Loading…</p>;
  if (specs.isError) return <p className="error" role="alert">{messageOf(specs.error)}</p>;

  const queueData = queue.data;
  return (
    <div className="annotate">
      <nav aria-label="Breadcrumb" className="crumbs">
        {annotator ? (
          <>
            <Link {...links.mine()}>My queues</Link> / {projectId} / {queueData.name}
          </>
        ) : (
          <>
            <Link {...links.project(projectId)}>{projectId}</Link> / <Link {...links.queue(projectId, queueId)}>{queueData.name}</Link>
          </>
        )}
      </nav>
      <div className="annotate-bar">
        <h1>Annotate: {queueData.name}</h1>
        <Progress stats={stats.data} live={live} />
        {held && !reopened ? <LeaseCountdown key={`${held.item.id}:${held.leaseEndsAt}`} endsAt={held.leaseEndsAt} onLapse={annotation.lapse} /> : null}
        <div className="bar-buttons">
          {writable ? (
            <button type="button" className="secondary" onClick={annotation.previous} disabled={busy || !completedByMe} aria-keyshortcuts="p">
              Previous item <kbd aria-hidden="true">p</kbd>
            </button>
          ) : null}
          <button type="button" className="secondary" onClick={() => setHelpOpen(true)} aria-haspopup="dialog">
            Shortcuts <kbd aria-hidden="true">?</kbd>
          </button>
        </div>
      </div>
      <div role="status" className="notices">
        {notice ? <p className="notice">{notice}</p> : null}
      </div>
      {failure ? (
        <p className="error" role="alert">
          {failure}
        </p>
      ) : null}

      {phase === 'start' && !reopened ? (
        <section className="panel start" aria-label="Start">
          {queueData.description ? <p>{queueData.description}</p> : null}
          <p>
            Rubric: {fields.length ? fields.map((field) => field.name).join(', ') : 'no fields; a note and a reaction only'}. Each item is held for you for{' '}
            {formatSeconds(queueData.lease_seconds)} once claimed.
          </p>
          {writable ? (
            <button type="button" ref={startRef} onClick={annotation.start} disabled={busy}>
              Start annotating
            </button>
          ) : (
            <p>Your role in this project only reads: you cannot annotate here.</p>
          )}
        </section>
      ) : null}

      {phase === 'done' && !reopened ? <NothingLeft stats={stats.data} /> : null}

      {shownItem ? (
        // data-call-shown names the call once it is on screen: what the web benchmark waits for.
        <div className="annotate-work" data-call-shown={call.isSuccess ? call.data.id : undefined}>
          <div className="annotate-call">
            {reopened ? (
              <p className="reopened-banner">
                You completed this item earlier: change its answers and save, or go back{held ? ' to the current item' : ''}. <kbd>p</kbd> opens the one before it.
              </p>
            ) : null}
            {itemCall && shownCall ? (
              <>
                <TracePanel key={shownItem.id} itemTrace={itemTrace} itemCall={itemCall} shownId={shownCall.id} onShow={showCall} />
                <OtherCallNote itemCall={itemCall} shownCall={shownCall} onBack={backToItemCall} />
                <CallView call={shownCall} displayFields={shownCall === itemCall ? shownItem.display_fields : NO_FIELDS} headingId={headingId} other={shownCall !== itemCall} />
              </>
            ) : call.isError ? (
              <p className="error" role="alert">
                {messageOf(call.error)}
              </p>
            ) : (
              <p>Loading the call…</p>
            )}
          </div>
          <section className="annotate-rubric panel" aria-labelledby={`${headingId}-rubric`}>
            <h2 id={`${headingId}-rubric`}>Rubric</h2>
            <RubricForm
              fields={fields}
              inputs={form.inputs}
              errors={errors}
              note={form.note}
              reaction={form.reaction}
              onInput={annotation.setInput}
              onNote={annotation.setNote}
              onReaction={annotation.setReaction}
              noteRef={noteRef}
            />
            <div className="actions">
              {reopened ? (
                <>
                  <button type="button" onClick={annotation.submit} disabled={busy}>
                    Save changes
                  </button>
                  <button type="button" className="secondary" onClick={annotation.closeReopened} disabled={busy}>
                    {held ? 'Back to the current item' : 'Close this item'}
                  </button>
                </>
              ) : (
                <>
                  <button type="button" onClick={annotation.submit} disabled={busy} aria-keyshortcuts="Control+Enter Meta+Enter">
                    Submit and next
                  </button>
                  <button type="button" className="secondary" onClick={annotation.skip} disabled={busy} aria-keyshortcuts="s">
                    Skip
                  </button>
                </>
              )}
            </div>
            <p className="hint">
              <kbd>Ctrl</kbd>+<kbd>Enter</kbd> submits; <kbd>?</kbd> lists every shortcut.
            </p>
          </section>
        </div>
      ) : null}

      <FinishedList finished={finished} reopenedId={reopened?.item.id} onReopen={annotation.reopen} />
      <ShortcutsDialog open={helpOpen} onClose={() => setHelpOpen(false)} />
    </div>
  );
}

/** Display fields are the item's: another call of the trace shows none. */
const NO_FIELDS: string[] = [];

/** The queue does not exist: a link to a queue that never was, or one deleted while annotating. */
function QueueGone({ projectId, annotator }: { projectId: string; annotator: boolean }) {
  return (
    <section className="panel gone" aria-labelledby="queue-gone">
      <h1 id="queue-gone">This queue is gone</h1>
      <p>There is no such annotation queue in {projectId}: it was deleted, or the link is wrong. Nothing more can be annotated in it.</p>
      <p>{annotator ? <Link {...links.mine()}>Back to My queues</Link> : <Link {...links.project(projectId)}>Back to {projectId}</Link>}</p>
    </section>
  );
}

/** The server refused the queue to the caller (an assigned queue that does not name them, or not their entity). */
function QueueRefused({ reason }: { reason: string }) {
  return (
    <section className="panel gone" aria-labelledby="queue-refused">
      <h1 id="queue-refused">You cannot annotate this queue</h1>
      <p className="error" role="alert">
        {reason}
      </p>
      <p>
        <Link {...links.mine()}>See the queues open to you</Link>
      </p>
    </section>
  );
}

function formatSeconds(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? '1 minute' : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

function Progress({ stats, live }: { stats: QueueStats | undefined; live: LiveState }) {
  if (!stats) return null;
  return (
    <p className="progress" data-live={live} title={live === 'live' ? 'Updates live' : 'Not updating live: reload for the latest counts'}>
      <strong>{stats.done_items}</strong> of <strong>{stats.total_items}</strong> items done
    </p>
  );
}

function NothingLeft({ stats }: { stats: QueueStats | undefined }) {
  return (
    <section className="panel done" aria-labelledby="nothing-left">
      <h2 id="nothing-left">Nothing left to annotate</h2>
      <p>Every item of this queue that you could take is done or held by someone else.</p>
      {stats ? (
        <dl className="totals">
          <div>
            <dt>Items</dt>
            <dd>{stats.total_items}</dd>
          </div>
          <div>
            <dt>Done</dt>
            <dd>{stats.done_items}</dd>
          </div>
          <div>
            <dt>Completed</dt>
            <dd>{stats.by_state.completed}</dd>
          </div>
          <div>
            <dt>Skipped</dt>
            <dd>{stats.by_state.skipped}</dd>
          </div>
          <div>
            <dt>In progress</dt>
            <dd>{stats.by_state.in_progress}</dd>
          </div>
          <div>
            <dt>Not started</dt>
            <dd>{stats.by_state.unstarted}</dd>
          </div>
        </dl>
      ) : null}
    </section>
  );
}

function FinishedList({ finished, reopenedId, onReopen }: { finished: Finished[]; reopenedId: string | undefined; onReopen: (item: Finished['item']) => void }) {
  if (!finished.length) return null;
  return (
    <section className="finished" aria-labelledby="finished-title">
      <h2 id="finished-title">Finished in this session</h2>
      <ol>
        {finished.map((entry) => (
          <li key={entry.item.id}>
            <span>
              {entry.item.call_op_name} <code>{entry.item.call_id}</code> — {entry.state}
            </span>
            {entry.state === 'completed' ? (
              <button type="button" className="secondary" onClick={() => onReopen(entry.item)} disabled={entry.item.id === reopenedId} aria-label={`Reopen ${entry.item.call_id}`}>
                Reopen
              </button>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
