import type { JsonValue } from '../annotate/rubric-fields.ts';
import { callRef } from '../annotate/feedback-records.ts';
import type { FeedbackRecord } from './queue-queries.ts';

// Who gave which value to which item, read from the queue's feedback records by the rule agreement
// uses (contract 5.7): an annotator's value for an item under a spec is `payload.value` of their
// most recently created `svc.annotation.<name>` record with the spec's ref; later records replace
// earlier ones (ties broken by id).

export type SpecOfValues = { ref: string; name: string };

/** One item's values: spec ref → annotator → value; and each annotator's latest note. */
export type ItemValues = { bySpec: Map<string, Map<string, JsonValue>>; notes: Map<string, string> };

type Held = { value: JsonValue; createdAt: string; id: string };

function isLater(record: FeedbackRecord, held: Held): boolean {
  return record.created_at !== held.createdAt ? record.created_at > held.createdAt : record.id > held.id;
}

/** Every call's values (keyed by call id), from records of the queue. */
export function valuesByCall(projectId: string, records: FeedbackRecord[], specs: SpecOfValues[]): Map<string, ItemValues> {
  const prefix = callRef(projectId, '');
  const specOf = new Map(specs.map((spec) => [`svc.annotation.${spec.name}\u0000${spec.ref}`, spec.ref]));
  const held = new Map<string, { bySpec: Map<string, Map<string, Held>>; notes: Map<string, Held> }>();
  for (const record of records) {
    // The call the record is about: in svc_ref, else in call_ref.
    const ref = record.svc_ref.startsWith(prefix) ? record.svc_ref : record.call_ref?.startsWith(prefix) ? record.call_ref : null;
    if (ref === null) continue;
    const callId = ref.slice(prefix.length);
    let entry = held.get(callId);
    if (!entry) held.set(callId, (entry = { bySpec: new Map(), notes: new Map() }));
    const who = record.svc_user_id;
    let target: Map<string, Held> | undefined;
    let value: JsonValue | undefined;
    if (record.feedback_type === 'svc.note.1') {
      target = entry.notes;
      value = typeof record.payload.note === 'string' ? record.payload.note : undefined;
    } else {
      const specRef = specOf.get(`${record.feedback_type}\u0000${record.annotation_ref ?? ''}`);
      if (specRef === undefined || !('value' in record.payload)) continue;
      target = entry.bySpec.get(specRef);
      if (!target) entry.bySpec.set(specRef, (target = new Map()));
      value = record.payload.value as JsonValue;
    }
    if (value === undefined) continue;
    const before = target.get(who);
    if (!before || isLater(record, before)) target.set(who, { value, createdAt: record.created_at, id: record.id });
  }
  const values = new Map<string, ItemValues>();
  for (const [callId, entry] of held) {
    values.set(callId, {
      bySpec: new Map([...entry.bySpec].map(([ref, byWho]) => [ref, new Map([...byWho].map(([who, { value }]) => [who, value]))])),
      notes: new Map([...entry.notes].map(([who, { value }]) => [who, value as string])),
    });
  }
  return values;
}

/** The annotators of an item (anyone with a value or a note), in code-point order of their ids like agreement's. */
export function annotatorsOf(values: ItemValues | undefined): string[] {
  if (!values) return [];
  const ids = new Set<string>(values.notes.keys());
  for (const byWho of values.bySpec.values()) for (const who of byWho.keys()) ids.add(who);
  return [...ids].sort(byCodePoint);
}

/** Code-point order of user ids (not locale order), as agreement lists annotators. */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
