import { MAX_SCALE_STEPS } from '../annotate/rubric-fields.ts';

// The rubric builder's kinds of field, each written as the JSON Schema the annotate page turns
// back into that field (rubric-fields.ts: fieldKind). "JSON Schema" is the advanced kind: the
// schema as typed.

export const SPEC_KINDS = [
  { kind: 'scale', label: 'A scale' },
  { kind: 'boolean', label: 'Yes or no' },
  { kind: 'choice', label: 'One of a list' },
  { kind: 'multi', label: 'Several of a list' },
  { kind: 'text', label: 'Free text' },
  { kind: 'number', label: 'A number' },
  { kind: 'json', label: 'JSON Schema (advanced)' },
] as const;
export type SpecKind = (typeof SPEC_KINDS)[number]['kind'];

/** What the builder's form holds, as typed. */
export type Draft = {
  kind: SpecKind;
  /** A scale's ends and their words; a number's bounds (optional). */
  min: string;
  max: string;
  minLabel: string;
  maxLabel: string;
  /** A list's options, one a line. */
  options: string;
  /** A number: whole numbers only. */
  integer: boolean;
  /** Free text: its longest answer, optional. */
  maxLength: string;
  /** The advanced kind: the schema as typed. */
  schema: string;
};

export const emptyDraft = (): Draft => ({ kind: 'scale', min: '1', max: '5', minLabel: '', maxLabel: '', options: '', integer: false, maxLength: '', schema: '' });

/** A draft's field that is refused, and why (one sentence for the person). */
export type DraftProblem = { field: keyof Draft; reason: string };

type Schema = Record<string, unknown>;

/** The JSON Schema a draft stands for, or the first thing in it to fix. */
export function schemaOf(draft: Draft): { schema: Schema } | { problem: DraftProblem } {
  const problem = (field: keyof Draft, reason: string) => ({ problem: { field, reason } });
  switch (draft.kind) {
    case 'scale': {
      const min = wholeNumber(draft.min);
      const max = wholeNumber(draft.max);
      if (min === undefined) return problem('min', 'The lowest point must be a whole number.');
      if (max === undefined) return problem('max', 'The highest point must be a whole number.');
      if (max <= min) return problem('max', 'The highest point must be above the lowest.');
      if (max - min >= MAX_SCALE_STEPS) return problem('max', `A scale has at most ${MAX_SCALE_STEPS} points; for a wider range choose a number.`);
      const low = draft.minLabel.trim();
      const high = draft.maxLabel.trim();
      const schema: Schema = { type: 'integer', minimum: min, maximum: max };
      if (low || high) {
        // Words for the ends, as named values (see optionTitles); the points between them stay plain.
        const from = low ? min + 1 : min;
        const to = high ? max - 1 : max;
        schema.anyOf = [...(low ? [{ const: min, title: low }] : []), ...(high ? [{ const: max, title: high }] : []), ...(from <= to ? [{ minimum: from, maximum: to }] : [])];
      }
      return { schema };
    }
    case 'boolean':
      return { schema: { type: 'boolean' } };
    case 'choice':
    case 'multi': {
      const options = draft.options.split('\n').map((line) => line.trim()).filter(Boolean);
      if (options.length < 2) return problem('options', 'Give at least two options, one a line.');
      const repeated = options.find((option, index) => options.indexOf(option) !== index);
      if (repeated) return problem('options', `"${repeated}" is listed twice.`);
      return { schema: draft.kind === 'choice' ? { enum: options } : { type: 'array', items: { enum: options }, uniqueItems: true } };
    }
    case 'text': {
      if (!draft.maxLength.trim()) return { schema: { type: 'string' } };
      const maxLength = wholeNumber(draft.maxLength);
      if (maxLength === undefined || maxLength < 1) return problem('maxLength', 'The longest answer must be a whole number of characters, at least 1.');
      return { schema: { type: 'string', maxLength } };
    }
    case 'number': {
      const read = draft.integer ? wholeNumber : anyNumber;
      const schema: Schema = { type: draft.integer ? 'integer' : 'number' };
      for (const [field, keyword] of [['min', 'minimum'], ['max', 'maximum']] as const) {
        if (!draft[field].trim()) continue;
        const value = read(draft[field]);
        if (value === undefined) return problem(field, `The ${field === 'min' ? 'least' : 'greatest'} value must be ${draft.integer ? 'a whole number' : 'a number'}.`);
        schema[keyword] = value;
      }
      if (typeof schema.minimum === 'number' && typeof schema.maximum === 'number' && schema.maximum < schema.minimum) return problem('max', 'The greatest value must not be below the least.');
      return { schema };
    }
    case 'json': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(draft.schema);
      } catch {
        return problem('schema', 'The JSON Schema is not valid JSON.');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return problem('schema', 'The JSON Schema must be a JSON object, such as {"type": "boolean"}.');
      return { schema: parsed as Schema };
    }
  }
}

function wholeNumber(text: string): number | undefined {
  const value = anyNumber(text);
  return value !== undefined && Number.isSafeInteger(value) ? value : undefined;
}

function anyNumber(text: string): number | undefined {
  if (!text.trim()) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
