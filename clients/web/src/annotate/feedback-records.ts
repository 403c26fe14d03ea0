import type { RouterInputs } from '@loupe/client';
import type { JsonValue } from './rubric-fields.ts';

// The feedback records one annotated item becomes (contract 4.2/4.3): one `svc.annotation.<name>`
// per rubric field (with the spec's ref as `annotation_ref`), `svc.note.1` when a note was written
// and `svc.reaction.1` when a reaction was picked; each about the call (`svc_ref` and `call_ref`)
// and naming the queue.

export type FeedbackCreate = RouterInputs['feedback']['batchCreate']['batch'][number];

/** What an annotator gave for one item: values by spec ref, the note, the reaction. */
export type Answers = { values: Map<string, JsonValue>; note: string; reaction: string };

export type RubricSpec = { ref: string; name: string };

/** Where each stored record of an item is, so that a reopened item's records can be replaced. */
export type StoredRecords = Map<string, string>; // record key (spec ref, 'note', 'reaction') → feedback id

export function callRef(projectId: string, callId: string): string {
  return `svc:///${projectId}/call/${callId}`;
}

/** The records of an item's answers, each with the key it is stored under. */
export function feedbackRecords(projectId: string, queueId: string, callId: string, specs: RubricSpec[], answers: Answers): { key: string; record: FeedbackCreate }[] {
  const ref = callRef(projectId, callId);
  const about = { project_id: projectId, svc_ref: ref, call_ref: ref, queue_id: queueId };
  const records: { key: string; record: FeedbackCreate }[] = [];
  for (const spec of specs) {
    if (!answers.values.has(spec.ref)) continue;
    records.push({
      key: spec.ref,
      record: { ...about, feedback_type: `svc.annotation.${spec.name}`, annotation_ref: spec.ref, payload: { value: answers.values.get(spec.ref) } },
    });
  }
  const note = answers.note.trim();
  if (note) records.push({ key: 'note', record: { ...about, feedback_type: 'svc.note.1', payload: { note } } });
  if (answers.reaction) records.push({ key: 'reaction', record: { ...about, feedback_type: 'svc.reaction.1', payload: { emoji: answers.reaction } } });
  return records;
}

/** The writes that turn a reopened item's stored records into its new answers. */
export function changesOf(stored: StoredRecords, records: { key: string; record: FeedbackCreate }[]) {
  const kept = new Set(records.map(({ key }) => key));
  return {
    replace: records.flatMap(({ key, record }) => (stored.has(key) ? [{ key, record: { ...record, feedback_id: stored.get(key)! } }] : [])),
    create: records.filter(({ key }) => !stored.has(key)),
    purge: [...stored].filter(([key]) => !kept.has(key)).map(([key, id]) => ({ key, id })),
  };
}

/** At most as long as `svc.note.1` allows. */
export const NOTE_MAX = 1024;

/** A random UUID (v4). crypto.randomUUID exists only in secure contexts; getRandomValues everywhere. */
export function newFeedbackId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Gives each record a client-made id, the same one for the same content: a submission retried
 * after a failure (say, the progress write after the feedback write) stores nothing twice.
 */
export class RecordIds {
  private readonly ids = new Map<string, { content: string; id: string }>();
  assign(records: { key: string; record: FeedbackCreate }[]): FeedbackCreate[] {
    return records.map(({ key, record }) => {
      const content = JSON.stringify(record);
      let known = this.ids.get(key);
      if (known?.content !== content) {
        known = { content, id: newFeedbackId() };
        this.ids.set(key, known);
      }
      return { ...record, id: known.id };
    });
  }
}

/** A stored record, as the feedback query answers it. */
export type StoredRecord = { id: string; feedback_type: string; annotation_ref: string | null; payload: Record<string, unknown> };

/**
 * What an annotator gave for an item, back from their own stored records (oldest first: a later
 * record of the same key supersedes an earlier one, as agreement reads them): the value of each
 * rubric spec, the note, the reaction, and where each is stored. Records of specs no longer in
 * the rubric are left alone.
 */
export function answersOf(records: readonly StoredRecord[], specs: RubricSpec[]): { answers: Answers; stored: StoredRecords } {
  const refs = new Set(specs.map((spec) => spec.ref));
  const answers: Answers = { values: new Map(), note: '', reaction: '' };
  const stored: StoredRecords = new Map();
  for (const record of records) {
    if (record.feedback_type.startsWith('svc.annotation.') && record.annotation_ref && refs.has(record.annotation_ref) && 'value' in record.payload) {
      answers.values.set(record.annotation_ref, record.payload.value as JsonValue);
      stored.set(record.annotation_ref, record.id);
    } else if (record.feedback_type === 'svc.note.1' && typeof record.payload.note === 'string') {
      answers.note = record.payload.note;
      stored.set('note', record.id);
    } else if (record.feedback_type === 'svc.reaction.1' && typeof record.payload.emoji === 'string') {
      answers.reaction = record.payload.emoji;
      stored.set('reaction', record.id);
    }
  }
  return { answers, stored };
}
