import type { LoupeClient } from '@loupe/client';
import { useIsMutating, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { canAnnotate, roleIn } from '../access.ts';
import { messageOf, meQuery, statusOf } from '../api.ts';
import { useQueueEvents } from '../live/useQueueEvents.ts';
import { callQuery, queueQuery, queueStatsQuery, readAhead, rubricQuery, type Queue, type QueueItem } from './annotate-queries.ts';
import { answersOf, callRef, changesOf, feedbackRecords, RecordIds, type StoredRecords } from './feedback-records.ts';
import { FinishedWalk } from './finished-walk.ts';
import { forgetLease, leaseEndsAt } from './lease.ts';
import { toRubricField, type RubricField } from './RubricForm.tsx';
import { checkValue, fieldOptions, inputOf, readInput, toggled, type FieldInput, type JsonValue } from './rubric-fields.ts';

/** The item the annotator holds, and when its lease ends (ms since the epoch). */
export type Held = { item: QueueItem; leaseEndsAt: number };
/** What the annotator entered for an item. */
export type Form = { inputs: Map<string, FieldInput>; note: string; reaction: string };
/** An item finished in this session; completed ones can be reopened. */
export type Finished = { item: QueueItem; state: 'completed' | 'skipped' };
/** A completed item open again: the answers read back from the annotator's own records, and where those are stored. */
export type Reopened = { item: QueueItem; form: Form; stored: StoredRecords };

type Phase = { name: 'start' } | { name: 'annotating'; held: Held } | { name: 'done' };

const emptyForm = (): Form => ({ inputs: new Map(), note: '', reaction: '' });

type SessionOptions = { client: LoupeClient; session: number; projectId: string; queueId: string };

/**
 * An annotator's session on a queue: what it reads (the queue, its rubric, its stats live, the
 * shown item's call), where the annotator is (start, an item held, done; a finished item
 * reopened), what they entered, and the writes — each a mutation, one at a time.
 *
 * The next item appears at once: while the annotator works on an item, the calls of the items a
 * claim will likely hand out next are read ahead into the cache (`readAhead`). Submit and next
 * then writes the feedback, the progress and the claim one after the other (claim answers the
 * caller's held item until its progress is written, contract 5.2) and shows the claimed item from
 * the cache in the same render; only an item that was not read ahead waits for its call.
 *
 * Blind: the only feedback it reads is the annotator's own, to reopen an item they completed —
 * from this session's list, or walking back with "previous" through every item they completed in
 * the queue, latest first, in this or any earlier session (FinishedWalk). Saving a reopened item
 * replaces its records: new records supersede the old (agreement reads the latest), and its
 * progress stays completed.
 */
export function useAnnotationSession({ client, session, projectId, queueId }: SessionOptions) {
  const queryClient = useQueryClient();
  const me = useQuery(meQuery(client, session));
  const queue = useQuery(queueQuery(client, session, projectId, queueId));
  const stats = useQuery(queueStatsQuery(client, session, projectId, queueId));
  const specs = useQuery({ ...rubricQuery(client, session, projectId, queue.data?.scorer_refs ?? []), enabled: queue.isSuccess });
  const fields = useMemo<RubricField[]>(() => (specs.data ?? []).map(toRubricField), [specs.data]);
  const schemas = useMemo(() => new Map((specs.data ?? []).map((spec) => [spec.ref, spec.field_schema])), [specs.data]);
  const writable = canAnnotate(roleIn(me.data, projectId));

  const [phase, setPhase] = useState<Phase>({ name: 'start' });
  const [form, setForm] = useState<Form>(emptyForm);
  const [errors, setErrors] = useState<Map<string, string>>(new Map());
  const [failure, setFailure] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [finished, setFinished] = useState<Finished[]>([]);
  const [reopened, setReopened] = useState<Reopened | null>(null);
  const recordIds = useRef(new RecordIds());
  const walk = useRef<FinishedWalk | null>(null);
  walk.current ??= new FinishedWalk(client, projectId, queueId);

  const held = phase.name === 'annotating' ? phase.held : null;
  const shownItem = reopened?.item ?? held?.item ?? null;
  const call = useQuery({ ...callQuery(client, session, projectId, shownItem?.call_id ?? ''), enabled: shownItem !== null });

  // Done / total follow other annotators' work without a reload. The queue itself is read again
  // only when it changed: a deleted queue then shows as gone at once.
  const statsKey = queueStatsQuery(client, session, projectId, queueId).queryKey;
  const live = useQueueEvents(client, projectId, queueId, [statsKey], { onQueueUpdated: () => void queue.refetch() });
  /** The queue does not exist (a wrong link), or was deleted while the page was open. */
  const gone = queue.isError && statusOf(queue.error) === 404;

  // Read ahead the calls of the items likely to come next.
  const heldId = held?.item.id;
  useEffect(() => {
    if (!heldId) return;
    readAhead(client, queryClient, session, projectId, queueId, new Set([heldId])).catch(() => {
      // Only a speed-up: the next call is read when its item is shown.
    });
  }, [heldId, client, queryClient, session, projectId, queueId]);

  // Every write of the session shares one key: one runs at a time, and `busy` is whether one does.
  const mutationKey = ['annotate', session, projectId, queueId];
  const busy = useIsMutating({ mutationKey }) > 0;
  /** Whether a write is under way now (read from the cache, so a second key press in the same tick sees the first). */
  const writing = () => queryClient.isMutating({ mutationKey }) > 0;
  const writeOptions = {
    mutationKey,
    onMutate: () => setFailure(undefined),
    onError: (error: unknown) => {
      setFailure(messageOf(error));
      // The queue may be what went away (a 404, or feedback naming a queue that no longer is).
      void queue.refetch();
    },
  };

  /** Shows the claimed item (or that nothing is left) with an empty form. */
  const show = (item: QueueItem | null, queueData: Queue) => {
    setForm(emptyForm());
    setErrors(new Map());
    setPhase(item ? { name: 'annotating', held: { item, leaseEndsAt: leaseEndsAt(item.id, queueData.lease_seconds) } } : { name: 'done' });
    void queryClient.invalidateQueries({ queryKey: statsKey });
  };
  const claimNext = () => client.annotationQueues.items.claim.mutate({ project_id: projectId, queue_id: queueId });
  /** Records an item as finished; its lease is no longer shown. */
  const finish = (entry: Finished) => {
    forgetLease(entry.item.id);
    setFinished((list) => [...list, entry]);
    setNotice(undefined);
  };

  const claim = useMutation({
    ...writeOptions,
    mutationFn: (_: { queueData: Queue }) => claimNext(),
    onSuccess: ({ item }, { queueData }) => show(item, queueData),
  });

  const complete = useMutation({
    ...writeOptions,
    mutationFn: async ({ item, values, form: entered }: { item: QueueItem; values: Map<string, JsonValue>; form: Form; queueData: Queue }) => {
      const answers = { values, note: entered.note, reaction: entered.reaction };
      const records = feedbackRecords(projectId, queueId, item.call_id, fields, answers);
      const batch = recordIds.current.assign(records);
      const { res } = batch.length ? await client.feedback.batchCreate.mutate({ batch }) : { res: [] };
      await client.annotationQueues.items.progress.mutate({ project_id: projectId, queue_id: queueId, item_id: item.id, annotation_state: 'completed' });
      // Progress is stored: the item is finished even if the claim after it fails.
      finish({ item, state: 'completed' });
      walk.current = new FinishedWalk(client, projectId, queueId); // it is now the latest
      return claimNext();
    },
    onSuccess: ({ item }, { queueData }) => show(item, queueData),
  });

  const skipItem = useMutation({
    ...writeOptions,
    mutationFn: async ({ item }: { item: QueueItem; queueData: Queue }) => {
      await client.annotationQueues.items.progress.mutate({ project_id: projectId, queue_id: queueId, item_id: item.id, annotation_state: 'skipped' });
      finish({ item, state: 'skipped' });
      return claimNext();
    },
    onSuccess: ({ item }, { queueData }) => show(item, queueData),
  });

  /** A reopened item: its records replaced (feedback/replace), added or removed to match the form. */
  const saveChanges = useMutation({
    ...writeOptions,
    mutationFn: async ({ entry, values, saved }: { entry: Reopened; values: Map<string, JsonValue>; saved: Form }) => {
      const records = feedbackRecords(projectId, queueId, entry.item.call_id, fields, { values, note: saved.note, reaction: saved.reaction });
      // Each record is replaced (purged and created in one transaction): the new one supersedes it.
      const changes = changesOf(entry.stored, records);
      for (const { record } of changes.replace) await client.feedback.replace.mutate(record);
      if (changes.create.length) await client.feedback.batchCreate.mutate({ batch: changes.create.map(({ record }) => record) });
      if (changes.purge.length) await client.feedback.purge.mutate({ project_id: projectId, ids: changes.purge.map(({ id }) => id) });
    },
    onSuccess: (_, { entry }) => {
      setNotice(`Saved your changes to ${entry.item.call_op_name} (${entry.item.call_id}).`);
      closeReopened();
    },
  });

  /** Reads and checks every field against its spec's schema; null when something is refused. */
  const checkForm = (current: Form): Map<string, JsonValue> | null => {
    const found = new Map<string, string>();
    const values = new Map<string, JsonValue>();
    for (const field of fields) {
      const value = readInput(field.kind, current.inputs.get(field.ref));
      if (value instanceof Error) found.set(field.ref, value.message);
      else if (value === undefined) {
        if (!field.optional) found.set(field.ref, fieldOptions(field.kind).length ? 'Choose a value.' : 'Enter a value.');
      }
      else {
        const refused = checkValue(schemas.get(field.ref)!, value);
        if (refused) found.set(field.ref, refused);
        else values.set(field.ref, value);
      }
    }
    setErrors(found);
    if (found.size) {
      showField(fields.find((field) => found.has(field.ref))!.ref);
      return null;
    }
    return values;
  };

  const start = () => {
    if (queue.data && !writing()) claim.mutate({ queueData: queue.data });
  };

  const submit = () => {
    if (writing()) return;
    if (reopened) {
      const values = checkForm(form);
      if (values) saveChanges.mutate({ entry: reopened, values, saved: form });
      return;
    }
    if (!held || !queue.data) return;
    const values = checkForm(form);
    if (values) complete.mutate({ item: held.item, values, form, queueData: queue.data });
  };

  const skip = () => {
    if (!held || !queue.data || reopened || writing()) return;
    skipItem.mutate({ item: held.item, queueData: queue.data });
  };

  /** The held item's form is set aside while a finished item is open, and comes back after. */
  const setAside = useRef<{ form: Form; errors: Map<string, string> } | null>(null);
  const userId = me.data?.user_id;

  /**
   * Opens a completed item again with the answers its annotator stored (their own records only):
   * the one named, or the one completed before `before` (the latest when null).
   */
  const open = useMutation({
    ...writeOptions,
    mutationFn: async (target: { item: QueueItem } | { before: string | null }): Promise<Reopened | null> => {
      const item = 'item' in target ? target.item : await walk.current!.olderThan(target.before);
      if (!item) return null;
      const { result } = await client.feedback.query.query({
        project_id: projectId,
        filter: { queue_id: queueId, call_ref: callRef(projectId, item.call_id), svc_user_id: userId! },
        sort_by: [{ field: 'created_at', direction: 'asc' }],
        limit: 1000,
      });
      const { answers, stored } = answersOf(result, fields);
      const inputs = new Map<string, FieldInput>();
      for (const field of fields) {
        const value = answers.values.get(field.ref);
        if (value !== undefined) inputs.set(field.ref, inputOf(field.kind, value));
      }
      return { item, form: { inputs, note: answers.note, reaction: answers.reaction }, stored };
    },
    onSuccess: (entry, target) => {
      if (!entry) {
        setNotice('before' in target && target.before ? 'This is the earliest item you completed in this queue.' : 'You have not completed an item in this queue yet.');
        return;
      }
      if (!reopened) setAside.current = { form, errors };
      setReopened(entry);
      setForm(entry.form);
      setErrors(new Map());
    },
  });
  const reopen = (item: QueueItem) => {
    if (!writing() && userId) open.mutate({ item });
  };
  /** The item the annotator completed before the one open (the latest one when none is), in this session or an earlier one. */
  const previous = () => {
    if (!writing() && userId) open.mutate({ before: reopened?.item.id ?? null });
  };

  function closeReopened() {
    setReopened(null);
    setForm(setAside.current?.form ?? emptyForm());
    setErrors(setAside.current?.errors ?? new Map());
    setAside.current = null;
  }

  /** The lease ran out: say so and claim again (the lapsed item may now go to someone else). */
  const lapse = () => {
    if (!held || !queue.data) return;
    setNotice(`Your lease on ${held.item.call_op_name} (${held.item.call_id}) lapsed: it may go to someone else now. Claimed the next item.`);
    forgetLease(held.item.id);
    if (!writing()) claim.mutate({ queueData: queue.data });
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

  /** A digit key: that option of the focused field, else of the first unanswered one; a typed field gets the digit as text. */
  const pick = (option: number, focused: string | undefined) => {
    if (!shownItem) return;
    const target = fields.find((field) => field.ref === focused) ?? fields.find((field) => readInput(field.kind, form.inputs.get(field.ref)) === undefined);
    if (!target) return;
    const options = fieldOptions(target.kind);
    if (options.length) {
      if (option > options.length) return;
      const chosen = options[option - 1]!;
      setInput(target.ref, { chosen: target.kind.kind === 'multi' ? toggled(target.kind, form.inputs.get(target.ref), chosen) : chosen });
      return;
    }
    // A number field: the digit starts its value, and the typing goes on in its box. Text is
    // never written by a shortcut.
    if (target.kind.kind !== 'number') return;
    const input = form.inputs.get(target.ref);
    setInput(target.ref, { text: (input && 'text' in input ? input.text : '') + String(option) });
    focusInput(target.ref);
  };

  return {
    queue,
    gone,
    stats,
    specs,
    fields,
    writable,
    live,
    phase: phase.name,
    held,
    shownItem,
    call,
    form,
    errors,
    failure,
    notice,
    finished,
    reopened,
    busy,
    /** How many items of the queue the annotator has completed, in any session (0 while unknown). */
    completedByMe: stats.data?.by_annotator.find((entry) => entry.annotator_user_id === userId)?.completed ?? 0,
    start,
    submit,
    skip,
    reopen,
    previous,
    closeReopened,
    lapse,
    pick,
    setInput,
    setNote: (note: string) => setForm((current) => ({ ...current, note })),
    setReaction: (reaction: string) => setForm((current) => ({ ...current, reaction })),
  };
}

const fieldElement = (ref: string) => document.querySelector<HTMLElement>(`[data-rubric-field="${CSS.escape(ref)}"]`);

/**
 * Brings a refused field to the annotator: a choice's chosen (else first) option, a typed field's
 * label — not its text box, so that the keys typed next are still shortcuts (a screen reader reads
 * the field's name and its error).
 */
function showField(ref: string): void {
  const field = fieldElement(ref);
  if (!field) return;
  if (field instanceof HTMLFieldSetElement) (field.querySelector<HTMLElement>('input:checked') ?? field.querySelector<HTMLElement>('input'))?.focus();
  else field.querySelector<HTMLElement>('label')?.focus();
}

/** Focus in a typed field's box, to type on there. */
function focusInput(ref: string): void {
  fieldElement(ref)?.querySelector<HTMLElement>('input, textarea')?.focus();
}
