import { parseRef, type FeedbackCreateReq, type ObjectRef, type Ref } from '@loupe/shared';
import type { ValidateFunction } from 'ajv';
import { describeEmoji } from './emoji.ts';
import { invalid } from './errors.ts';
import { schemaProblem } from './json-schema.ts';

// The per-element rules of feedback (contract 4.2, 4.3 and 6). Pure apart from two lookups the
// caller answers from the database: annotation specs by ref, and live queues.

export type FeedbackLookups = {
  /** The compiled field schema of a stored spec, or null when the project has no such spec. */
  specSchema(projectId: string, name: string, digest: string): ValidateFunction | null;
  queueIsLive(projectId: string, queueId: string): boolean;
};

export type CheckedFeedback = {
  payload: Record<string, unknown>;
  annotationSpec: { name: string; digest: string } | null;
  queueId: string | null;
};

const NOTE_MAX = 1024;
const REF_FIELDS = ['annotation_ref', 'runnable_ref', 'call_ref', 'trigger_ref'] as const;
/** The kinds of ref each field takes. */
const ANY_KIND: readonly Ref['kind'][] = ['object', 'op', 'call', 'table'];
const CALL_KIND: readonly Ref['kind'][] = ['call'];
const OBJECT_KIND: readonly Ref['kind'][] = ['object'];
const OP_OR_OBJECT_KIND: readonly Ref['kind'][] = ['op', 'object'];

/** What an element needs looked up before its rules can run: its annotation spec and queue. */
export function lookupsNeeded(element: FeedbackCreateReq): { spec: ObjectRef | null; queueId: string | null } {
  const ref = element.annotation_ref ? parseRef(element.annotation_ref) : null;
  return {
    spec: ref?.ok && ref.ref.kind === 'object' ? ref.ref : null,
    queueId: element.queue_id ?? null,
  };
}

/** The 400 of an element whose queue_id names no live queue of its project. */
export const noSuchQueue = (where: string, projectId: string) => invalid(`${where}queue_id names no annotation queue of project ${projectId}.`);

/**
 * Applies every rule to one element; the thrown 400 names the element (`where`, e.g. `batch[3].`,
 * empty for a single record) and the field.
 */
export function checkFeedback(
  element: FeedbackCreateReq,
  { where, lookups, maxPayloadBytes }: { where: string; lookups: FeedbackLookups; maxPayloadBytes: number },
): CheckedFeedback {
  const at = (field: string) => `${where}${field}`;
  const fail = (field: string, reason: string) => invalid(`${at(field)} ${reason}`);
  const projectId = element.project_id;

  const ref = (field: (typeof REF_FIELDS)[number] | 'svc_ref', kinds: readonly Ref['kind'][]): Ref | null => {
    const text = element[field];
    if (text === undefined || text === null) return null;
    const parsed = parseRef(text);
    if (!parsed.ok) throw fail(field, `${parsed.reason}.`);
    if (parsed.ref.projectId !== projectId) throw fail(field, `must be a ref in project ${projectId}.`);
    if (!kinds.includes(parsed.ref.kind)) throw fail(field, `must be ${kinds.map((k) => `${/^[aeiou]/.test(k) ? 'an' : 'a'} ${k} ref`).join(' or ')}.`);
    return parsed.ref;
  };

  if (!ref('svc_ref', ANY_KIND)) throw fail('svc_ref', 'is required.');
  ref('call_ref', CALL_KIND);
  ref('trigger_ref', OBJECT_KIND);

  const type = element.feedback_type;
  let payload = element.payload;
  let annotationSpec: CheckedFeedback['annotationSpec'] = null;
  const forbidRefs = (fields: readonly (typeof REF_FIELDS)[number][], why: string) => {
    for (const field of fields) if (element[field] !== undefined && element[field] !== null) throw fail(field, why);
  };

  if (!type.startsWith('svc.')) {
    forbidRefs(REF_FIELDS, `is not allowed for feedback_type "${type}": refs belong to the built-in svc.* types.`);
  } else if (type === 'svc.reaction.1') {
    forbidRefs(['annotation_ref', 'runnable_ref'], 'is not allowed for a reaction.');
    const emoji = payload.emoji;
    const reaction = typeof emoji === 'string' ? describeEmoji(emoji) : null;
    if (!reaction) throw fail('payload.emoji', 'must be exactly one emoji of the Unicode RGI emoji set.');
    payload = { ...payload, ...reaction };
  } else if (type === 'svc.note.1') {
    forbidRefs(['annotation_ref', 'runnable_ref'], 'is not allowed for a note.');
    const note = payload.note;
    // Characters are code points, as in every other length limit (the zod schemas count them so
    // too); a note of at most NOTE_MAX UTF-16 units has no more code points, so only a longer one
    // is counted.
    const length = typeof note !== 'string' ? 0 : note.length <= NOTE_MAX ? note.length : [...note].length;
    if (typeof note !== 'string' || length < 1 || length > NOTE_MAX) {
      throw fail('payload.note', `must be a string of 1-${NOTE_MAX} characters.`);
    }
  } else if (type.startsWith('svc.annotation.')) {
    const name = type.slice('svc.annotation.'.length);
    if (!name) throw fail('feedback_type', 'needs a name after "svc.annotation.".');
    forbidRefs(['runnable_ref'], 'is not allowed for annotation feedback.');
    const spec = ref('annotation_ref', OBJECT_KIND) as ObjectRef | null;
    if (!spec) throw fail('annotation_ref', `is required for feedback_type "${type}".`);
    if (spec.name !== name) throw fail('annotation_ref', `must name "${name}", the name in feedback_type.`);
    const schema = lookups.specSchema(projectId, spec.name, spec.digest);
    if (!schema) throw fail('annotation_ref', `names no stored annotation spec of project ${projectId}.`);
    if (!('value' in payload)) throw fail('payload.value', 'is required for annotation feedback.');
    const problem = schemaProblem(schema, payload.value);
    if (problem) throw fail('payload.value', `does not match the spec's field_schema: ${problem}.`);
    annotationSpec = { name: spec.name, digest: spec.digest };
  } else if (type.startsWith('svc.runnable.')) {
    const name = type.slice('svc.runnable.'.length);
    if (!name) throw fail('feedback_type', 'needs a name after "svc.runnable.".');
    forbidRefs(['annotation_ref'], 'is not allowed for runnable feedback.');
    const runnable = ref('runnable_ref', OP_OR_OBJECT_KIND) as ObjectRef | null;
    if (!runnable) throw fail('runnable_ref', `is required for feedback_type "${type}".`);
    if (runnable.name !== name) throw fail('runnable_ref', `must name "${name}", the name in feedback_type.`);
    if (runnable.kind === 'op' && !element.call_ref) throw fail('call_ref', 'is required when runnable_ref is an op ref.');
    if (!('output' in payload)) throw fail('payload.output', 'is required for runnable feedback.');
  } else {
    throw fail('feedback_type', `"${type}" uses the reserved prefix "svc." but is not a built-in type.`);
  }

  const queueId = element.queue_id ?? null;
  if (queueId !== null && !lookups.queueIsLive(projectId, queueId)) throw noSuchQueue(where, projectId);
  const bytes = Buffer.byteLength(JSON.stringify(payload));
  if (bytes > maxPayloadBytes) throw invalid(`${at('payload')}: Feedback payload too large (${bytes} bytes; at most ${maxPayloadBytes}).`);
  return { payload, annotationSpec, queueId };
}
