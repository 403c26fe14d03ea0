import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { canWrite, roleIn } from '../access.ts';
import { messageOf, meQuery } from '../api.ts';
import {
  callQuery,
  queueQuery,
  queueStatsQuery,
  readAhead,
  rubricQuery,
  type Queue,
  type QueueItem,
  type QueueStats,
} from '../annotate/annotate-queries.ts';
import { CallView } from '../annotate/CallView.tsx';
import { changesOf, feedbackRecords, RecordIds, type StoredRecords } from '../annotate/feedback-records.ts';
import { LeaseCountdown } from '../annotate/LeaseCountdown.tsx';
import { leaseEndsAt, forgetLease } from '../annotate/lease.ts';
import { RubricForm, type RubricField } from '../annotate/RubricForm.tsx';
import { checkValue, fieldKind, fieldOptions, readInput, type FieldInput, type JsonValue } from '../annotate/rubric-fields.ts';
import { ShortcutsDialog } from '../annotate/ShortcutsDialog.tsx';
import { useShortcuts } from '../annotate/shortcuts.ts';
import { useQueueEvents, type LiveState } from '../live/useQueueEvents.ts';
import { Link } from '@tanstack/react-router';
import { links } from '../routes.ts';
import type { QueuePageProps } from './page-props.ts';
import '../annotate/annotate.css';

/** The item the annotator holds, and when its lease ends (ms since the epoch). */
type Held = { item: QueueItem; leaseEndsAt: number };
/** What the annotator entered for an item. */
type Form = { inputs: Map<string, FieldInput>; note: string; reaction: string };
/** An item finished in this session; completed ones can be reopened and their feedback replaced. */
type Finished = { item: QueueItem; state: 'completed' | 'skipped'; form: Form; stored: StoredRecords };

type Phase = { name: 'start' } | { name: 'annotating'; held: Held } | { name: 'done' };

const emptyForm = (): Form => ({ inputs: new Map(), note: '', reaction: '' });

/**
 * Annotating a queue: claim an item, read its call, fill in the rubric, submit and go on.
 *
 * The next item appears at once: while the annotator works on an item, the calls of the items a
 * claim will likely hand out next are read ahead into the cache (`readAhead`). Submit and next
 * then writes the feedback, the progress and the claim one after the other (claim answers the
 * caller's held item until its progress is written, contract 5.2) and shows the claimed item from
 * the cache in the same render; only an item that was not read ahead waits for its call.
 *
 * Blind: the page never reads feedback, so no annotator sees another's values. A reopened item
 * shows the values this page itself stored for it.
 */
export function AnnotatePage({ client, session, projectId, queueId }: QueuePageProps) {
  const queryClient = useQueryClient();
  const me = useQuery(meQuery(client, session));
  const queue = useQuery(queueQuery(client, session, projectId, queueId));
  const stats = useQuery(queueStatsQuery(client, session, projectId, queueId));
  const specs = useQuery({ ...rubricQuery(client, session, projectId, queue.data?.scorer_refs ?? []), enabled: queue.isSuccess });
  const fields = useMemo<RubricField[]>(
    () => (specs.data ?? []).map((spec) => ({ ref: spec.ref, name: spec.name, description: spec.description, kind: fieldKind(spec.field_schema) })),
    [specs.data],
  );
  const schemas = useMemo(() => new Map((specs.data ?? []).map((spec) => [spec.ref, spec.field_schema])), [specs.data]);

  const [phase, setPhase] = useState<Phase>({ name: 'start' });
  const [form, setForm] = useState<Form>(emptyForm);
  const [errors, setErrors] = useState<Map<string, string>>(new Map());
  const [failure, setFailure] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [finished, setFinished] = useState<Finished[]>([]);
  const [reopened, setReopened] = useState<Finished | null>(null);
  const [helpOpen, setHelpOpen] = useState(false);
  const busyRef = useRef(false);
  const recordIds = useRef(new RecordIds());
  const noteRef = useRef<HTMLTextAreaElement>(null);
  const startRef = useRef<HTMLButtonElement>(null);
  const headingId = useId();

  const held = phase.name === 'annotating' ? phase.held : null;
  const shownItem = reopened?.item ?? held?.item ?? null;
  const call = useQuery({ ...callQuery(client, session, projectId, shownItem?.call_id ?? ''), enabled: shownItem !== null });
  const writable = canWrite(roleIn(me.data, projectId));

  // Done / total follow other annotators' work without a reload. Only the stats: the queue's own
  // settings are read once, so that a refetch does not renew what the write callbacks hold.
  const live = useQueueEvents(client, projectId, queueId, [queueStatsQuery(client, session, projectId, queueId).queryKey]);

  const refreshStats = useCallback(() => queryClient.invalidateQueries({ queryKey: queueStatsQuery(client, session, projectId, queueId).queryKey }), [client, session, projectId, queueId, queryClient]);

  /** Runs one write sequence at a time; a failure is shown and leaves the page where it was. */
  const exclusive = useCallback(async (work: () => Promise<void>) => {
    if (busyRef.current) return;
    busyRef.current = true;
    setBusy(true);
    setFailure(undefined);
    try {
      await work();
    } catch (error) {
      setFailure(messageOf(error));
    } finally {
      busyRef.current = false;
      setBusy(false);
    }
  }, []);

  /** Claims the next item and shows it (or that nothing is left). */
  const claimAndShow = useCallback(
    async (queueData: Queue) => {
      const { item } = await client.annotationQueues.items.claim.mutate({ project_id: projectId, queue_id: queueId });
      setForm(emptyForm());
      setErrors(new Map());
      setPhase(item ? { name: 'annotating', held: { item, leaseEndsAt: leaseEndsAt(item.id, queueData.lease_seconds) } } : { name: 'done' });
      void refreshStats();
    },
    [client, projectId, queueId, refreshStats],
  );

  const start = () => queue.data && exclusive(() => claimAndShow(queue.data));

  // Focus follows the work: the Start button when the page opens, the call's heading when an item
  // appears (screen readers announce it, and digit keys then go to the first unanswered field).
  const startShown = phase.name === 'start' && queue.isSuccess && specs.isSuccess && writable;
  useEffect(() => {
    if (startShown) startRef.current?.focus();
  }, [startShown]);
  const shownId = shownItem?.id;
  const callShown = call.isSuccess;
  useEffect(() => {
    if (shownId && callShown) document.getElementById(headingId)?.focus();
  }, [shownId, callShown, headingId]);

  // Read ahead the calls of the items likely to come next.
  const heldId = held?.item.id;
  useEffect(() => {
    if (!heldId) return;
    readAhead(client, queryClient, session, projectId, queueId, new Set([heldId])).catch(() => {
      // Only a speed-up: the next call is read when its item is shown.
    });
  }, [heldId, client, queryClient, session, projectId, queueId]);

  /** Reads and checks every field against its spec's schema; null when something is refused. */
  const checkForm = (current: Form): Map<string, JsonValue> | null => {
    const found = new Map<string, string>();
    const values = new Map<string, JsonValue>();
    for (const field of fields) {
      const value = readInput(field.kind, current.inputs.get(field.ref));
      if (value instanceof Error) found.set(field.ref, value.message);
      else if (value === undefined) found.set(field.ref, fieldOptions(field.kind).length ? 'Choose a value.' : 'Enter a value.');
      else {
        const refused = checkValue(schemas.get(field.ref)!, value);
        if (refused) found.set(field.ref, refused);
        else values.set(field.ref, value);
      }
    }
    setErrors(found);
    if (found.size) {
      focusField(fields.find((field) => found.has(field.ref))!.ref);
      return null;
    }
    return values;
  };

  const submit = () => {
    if (busyRef.current) return;
    if (reopened) return void saveReopened(reopened);
    if (!held || !queue.data) return;
    const values = checkForm(form);
    if (!values) return;
    const { item } = held;
    const queueData = queue.data;
    const answers = { values, note: form.note, reaction: form.reaction };
    void exclusive(async () => {
      const records = feedbackRecords(projectId, queueId, item.call_id, fields, answers);
      const batch = recordIds.current.assign(records);
      const { res } = batch.length ? await client.feedback.batchCreate.mutate({ batch }) : { res: [] };
      await client.annotationQueues.items.progress.mutate({ project_id: projectId, queue_id: queueId, item_id: item.id, annotation_state: 'completed' });
      forgetLease(item.id);
      const stored: StoredRecords = new Map(records.map(({ key }, index) => [key, res[index]!.id]));
      setFinished((list) => [...list, { item, state: 'completed', form, stored }]);
      setNotice(undefined);
      await claimAndShow(queueData);
    });
  };

  const skip = () => {
    if (!held || !queue.data || reopened) return;
    const { item } = held;
    const queueData = queue.data;
    void exclusive(async () => {
      await client.annotationQueues.items.progress.mutate({ project_id: projectId, queue_id: queueId, item_id: item.id, annotation_state: 'skipped' });
      forgetLease(item.id);
      setFinished((list) => [...list, { item, state: 'skipped', form: emptyForm(), stored: new Map() }]);
      setNotice(undefined);
      await claimAndShow(queueData);
    });
  };

  /** The held item's form is set aside while a finished item is open, and comes back after. */
  const setAside = useRef<{ form: Form; errors: Map<string, string> } | null>(null);
  const reopen = (entry: Finished) => {
    if (busyRef.current) return;
    if (!reopened) setAside.current = { form, errors };
    setReopened(entry);
    setForm(entry.form);
    setErrors(new Map());
  };
  const closeReopened = () => {
    setReopened(null);
    setForm(setAside.current?.form ?? emptyForm());
    setErrors(setAside.current?.errors ?? new Map());
    setAside.current = null;
  };

  /** A reopened item: its records replaced (feedback/replace), added or removed to match the form. */
  const saveReopened = (entry: Finished) => {
    const values = checkForm(form);
    if (!values) return;
    const saved = form;
    void exclusive(async () => {
      const records = feedbackRecords(projectId, queueId, entry.item.call_id, fields, { values, note: saved.note, reaction: saved.reaction });
      const changes = changesOf(entry.stored, records);
      const stored: StoredRecords = new Map(entry.stored);
      for (const { key, record } of changes.replace) stored.set(key, (await client.feedback.replace.mutate(record)).id);
      if (changes.create.length) {
        const { res } = await client.feedback.batchCreate.mutate({ batch: changes.create.map(({ record }) => record) });
        changes.create.forEach(({ key }, index) => stored.set(key, res[index]!.id));
      }
      if (changes.purge.length) {
        await client.feedback.purge.mutate({ project_id: projectId, ids: changes.purge.map(({ id }) => id) });
        for (const { key } of changes.purge) stored.delete(key);
      }
      setFinished((list) => list.map((other) => (other.item.id === entry.item.id ? { ...entry, form: saved, stored } : other)));
      setNotice(`Saved your changes to ${entry.item.call_op_name} (${entry.item.call_id}).`);
      closeReopened();
    });
  };

  /** The lease ran out: say so and claim again (the lapsed item may now go to someone else). */
  const lapse = useCallback(() => {
    if (!held || !queue.data) return;
    const lapsedId = held.item.id;
    const queueData = queue.data;
    setNotice(`Your lease on ${held.item.call_op_name} (${held.item.call_id}) lapsed: it may go to someone else now. Claimed the next item.`);
    forgetLease(lapsedId);
    void exclusive(() => claimAndShow(queueData));
  }, [held, queue.data, exclusive, claimAndShow]);

  const pick = (option: number, focused: string | undefined) => {
    const target = fields.find((field) => field.ref === focused) ?? fields.find((field) => readInput(field.kind, form.inputs.get(field.ref)) === undefined);
    if (!target) return;
    const options = fieldOptions(target.kind);
    if (options.length) {
      if (option > options.length) return;
      setInput(target.ref, { chosen: options[option - 1]! });
      return;
    }
    // A typed field: the digit starts its text, and the typing goes on there.
    const input = form.inputs.get(target.ref);
    setInput(target.ref, { text: (input && 'text' in input ? input.text : '') + String(option) });
    focusField(target.ref);
  };

  const setInput = (ref: string, input: FieldInput) => {
    setForm((current) => ({ ...current, inputs: new Map(current.inputs).set(ref, input) }));
    setErrors((current) => {
      if (!current.has(ref)) return current;
      const next = new Map(current);
      next.delete(ref);
      return next;
    });
  };

  useShortcuts(shownItem !== null, {
    submit,
    pick,
    skip,
    note: () => noteRef.current?.focus(),
    help: () => setHelpOpen(true),
    leaveField: () => document.getElementById(headingId)?.focus(),
  });

  if (queue.isPending || specs.isPending) return <p>Loading…</p>;
  if (queue.isError) return <p className="error" role="alert">{messageOf(queue.error)}</p>;
  if (specs.isError) return <p className="error" role="alert">{messageOf(specs.error)}</p>;

  const queueData = queue.data;
  return (
    <div className="annotate">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link {...links.project(projectId)}>{projectId}</Link> / <Link {...links.queue(projectId, queueId)}>{queueData.name}</Link>
      </nav>
      <div className="annotate-bar">
        <h1>Annotate: {queueData.name}</h1>
        <Progress stats={stats.data} live={live} />
        {held && !reopened ? <LeaseCountdown key={`${held.item.id}:${held.leaseEndsAt}`} endsAt={held.leaseEndsAt} onLapse={lapse} /> : null}
        <button type="button" className="secondary" onClick={() => setHelpOpen(true)} aria-haspopup="dialog">
          Shortcuts <kbd aria-hidden="true">?</kbd>
        </button>
      </div>
      <div role="status" className="notices">
        {notice ? <p className="notice">{notice}</p> : null}
      </div>
      {failure ? (
        <p className="error" role="alert">
          {failure}
        </p>
      ) : null}

      {phase.name === 'start' && !reopened ? (
        <section className="panel start" aria-label="Start">
          {queueData.description ? <p>{queueData.description}</p> : null}
          <p>
            Rubric: {fields.length ? fields.map((field) => field.name).join(', ') : 'no scorer specs; a note and a reaction only'}. Each item is held for you for{' '}
            {formatSeconds(queueData.lease_seconds)} once claimed.
          </p>
          {writable ? (
            <button type="button" ref={startRef} onClick={start} disabled={busy}>
              Start annotating
            </button>
          ) : (
            <p>Your role in this project only reads: you cannot annotate here.</p>
          )}
        </section>
      ) : null}

      {phase.name === 'done' && !reopened ? <NothingLeft stats={stats.data} /> : null}

      {shownItem ? (
        // data-call-shown names the call once it is on screen: what the web benchmark waits for.
        <div className="annotate-work" data-call-shown={call.isSuccess ? call.data.id : undefined}>
          <div className="annotate-call">
            {reopened ? (
              <p className="reopened-banner">
                You finished this item earlier: change its answers and save, or go back to the current item.
              </p>
            ) : null}
            {call.isSuccess ? (
              <CallView call={call.data} displayFields={shownItem.display_fields} headingId={headingId} />
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
              onInput={setInput}
              onNote={(note) => setForm((current) => ({ ...current, note }))}
              onReaction={(reaction) => setForm((current) => ({ ...current, reaction }))}
              noteRef={noteRef}
            />
            <div className="actions">
              {reopened ? (
                <>
                  <button type="button" onClick={submit} disabled={busy}>
                    Save changes
                  </button>
                  <button type="button" className="secondary" onClick={closeReopened} disabled={busy}>
                    Back to the current item
                  </button>
                </>
              ) : (
                <>
                  <button type="button" onClick={submit} disabled={busy} aria-keyshortcuts="Control+Enter Meta+Enter">
                    Submit and next
                  </button>
                  <button type="button" className="secondary" onClick={skip} disabled={busy} aria-keyshortcuts="s">
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

      <FinishedList finished={finished} reopenedId={reopened?.item.id} onReopen={reopen} />
      <ShortcutsDialog open={helpOpen} onClose={() => setHelpOpen(false)} />
    </div>
  );
}

/** Focus on a rubric field: its text box, or its chosen (else first) option. */
function focusField(ref: string): void {
  const field = document.querySelector<HTMLElement>(`[data-rubric-field="${CSS.escape(ref)}"]`);
  if (!field) return;
  if (field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement) field.focus();
  else (field.querySelector<HTMLElement>('input:checked') ?? field.querySelector<HTMLElement>('input'))?.focus();
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
      <strong>{stats.completed_items}</strong> of <strong>{stats.total_items}</strong> items done
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
            <dd>{stats.completed_items}</dd>
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

function FinishedList({ finished, reopenedId, onReopen }: { finished: Finished[]; reopenedId: string | undefined; onReopen: (entry: Finished) => void }) {
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
              <button type="button" className="secondary" onClick={() => onReopen(entry)} disabled={entry.item.id === reopenedId} aria-label={`Reopen ${entry.item.call_id}`}>
                Reopen
              </button>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
