import { Validator, type OutputUnit } from '@cfworker/json-schema';

// A rubric field is generated from its spec's JSON Schema, and its value is checked against that
// same schema in the browser before anything is sent. The validator is @cfworker/json-schema: it
// interprets the schema (Ajv generates code with `new Function`, which the app's CSP forbids).

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The input a schema gets. */
export type FieldKind =
  | { kind: 'scale'; options: number[]; titles: Titles } // a bounded integer with few steps: one choice per step
  | { kind: 'choice'; options: JsonValue[]; titles: Titles } // an enum
  | { kind: 'multi'; options: JsonValue[] } // an array of an enum's values: several choices
  | { kind: 'boolean'; options: [true, false] } // yes / no
  | { kind: 'text'; multiline: boolean }
  | { kind: 'number'; integer: boolean }
  | { kind: 'json' }; // anything else: JSON typed by hand

/** A bounded integer with at most this many steps is a scale; wider ranges take a number field. */
export const MAX_SCALE_STEPS = 11;

type Schema = Record<string, unknown>;

/**
 * Words for some options, by the option's JSON: a scale's ends ("1 — Poor"), say. They are read
 * from `anyOf`/`oneOf` entries `{"const": <value>, "title": <words>}`, the JSON Schema way of
 * naming a value (an `x-` keyword would be refused by the server's strict schema compiler).
 */
export type Titles = Map<string, string>;

export function optionTitles(schema: Schema): Titles {
  const titles: Titles = new Map();
  for (const list of [schema.anyOf, schema.oneOf]) {
    if (!Array.isArray(list)) continue;
    for (const entry of list as unknown[]) {
      if (!entry || typeof entry !== 'object' || !('const' in entry)) continue;
      const { const: value, title } = entry as { const: JsonValue; title?: unknown };
      if (typeof title === 'string' && title.trim()) titles.set(JSON.stringify(value), title);
    }
  }
  return titles;
}

/** The values of an array schema whose items are one of an enum's (several of a list), else undefined. */
function itemChoices(schema: Schema): JsonValue[] | undefined {
  if (schema.type !== undefined && typeOf(schema) !== 'array') return undefined;
  const items = schema.items;
  if (!items || typeof items !== 'object' || Array.isArray(items)) return undefined;
  const values = (items as Schema).enum;
  return Array.isArray(values) ? (values as JsonValue[]) : undefined;
}

function typeOf(schema: Schema): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  // ["integer", "null"] and the like: the one non-null type decides the input.
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== 'null');
    return types.length === 1 && typeof types[0] === 'string' ? types[0] : undefined;
  }
  return undefined;
}

export function fieldKind(schema: Schema): FieldKind {
  if (Array.isArray(schema.enum)) return { kind: 'choice', options: schema.enum as JsonValue[], titles: optionTitles(schema) };
  if ('const' in schema) return { kind: 'choice', options: [schema.const as JsonValue], titles: optionTitles(schema) };
  const several = itemChoices(schema);
  if (several) return { kind: 'multi', options: several };
  const type = typeOf(schema);
  if (type === 'boolean') return { kind: 'boolean', options: [true, false] };
  if (type === 'integer') {
    const low = typeof schema.minimum === 'number' ? Math.ceil(schema.minimum) : typeof schema.exclusiveMinimum === 'number' ? Math.floor(schema.exclusiveMinimum) + 1 : undefined;
    const high = typeof schema.maximum === 'number' ? Math.floor(schema.maximum) : typeof schema.exclusiveMaximum === 'number' ? Math.ceil(schema.exclusiveMaximum) - 1 : undefined;
    if (low !== undefined && high !== undefined && high >= low && high - low < MAX_SCALE_STEPS) {
      return { kind: 'scale', options: Array.from({ length: high - low + 1 }, (_, i) => low + i), titles: optionTitles(schema) };
    }
    return { kind: 'number', integer: true };
  }
  if (type === 'number') return { kind: 'number', integer: false };
  if (type === 'string') return { kind: 'text', multiline: typeof schema.maxLength !== 'number' || schema.maxLength > 120 };
  return { kind: 'json' };
}

/** The options a digit key picks (or, several of a list, ticks and unticks) by number, or none for typed fields. */
export function fieldOptions(kind: FieldKind): JsonValue[] {
  return kind.kind === 'text' || kind.kind === 'number' || kind.kind === 'json' ? [] : kind.options;
}

/** Several of a list: the ticked options with `option` ticked or unticked, in the list's order. */
export function toggled(kind: FieldKind & { kind: 'multi' }, input: FieldInput, option: JsonValue): JsonValue[] {
  const key = JSON.stringify(option);
  const ticked = new Set(input && 'chosen' in input && Array.isArray(input.chosen) ? input.chosen.map((value) => JSON.stringify(value)) : []);
  if (ticked.has(key)) ticked.delete(key);
  else ticked.add(key);
  return kind.options.filter((value) => ticked.has(JSON.stringify(value)));
}

/** How an option reads. */
export function optionLabel(value: JsonValue): string {
  if (value === true) return 'Yes';
  if (value === false) return 'No';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A field's value as typed: choices hold their JSON value; typed fields hold their text until
 * they are read (`readInput`), so that an unfinished number is shown as the person typed it.
 */
export type FieldInput = { chosen: JsonValue } | { text: string } | undefined;

/** The value a field's input stands for; undefined when unanswered, an Error when unreadable. */
export function readInput(kind: FieldKind, input: FieldInput): JsonValue | undefined | Error {
  // Several of a list is always answered: nothing ticked is the empty list (its schema may refuse it).
  if (kind.kind === 'multi') return input && 'chosen' in input ? input.chosen : [];
  if (input === undefined) return undefined;
  if ('chosen' in input) return input.chosen;
  const text = input.text;
  if (kind.kind === 'text') return text === '' ? undefined : text;
  if (text.trim() === '') return undefined;
  if (kind.kind === 'number') {
    const value = Number(text);
    return Number.isFinite(value) ? value : new Error('Enter a number.');
  }
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return new Error('Enter a JSON value.');
  }
}

/** The input that shows a stored value (a finished item reopened). */
export function inputOf(kind: FieldKind, value: JsonValue): FieldInput {
  if (fieldOptions(kind).length) return { chosen: value };
  if (kind.kind === 'text' && typeof value === 'string') return { text: value };
  if (kind.kind === 'number' && typeof value === 'number') return { text: String(value) };
  return { text: JSON.stringify(value) };
}

const validators = new Map<string, Validator>();

/** The schema's verdict on a value: null when valid, else one sentence for the person. */
export function checkValue(schema: Schema, value: JsonValue): string | null {
  const key = JSON.stringify(schema);
  let validator = validators.get(key);
  if (!validator) {
    validator = new Validator(schema as ConstructorParameters<typeof Validator>[0], '2020-12', false);
    validators.set(key, validator);
  }
  const result = validator.validate(value);
  return result.valid ? null : explain(result.errors, schema);
}

/** The most specific error, in words: the deepest one that is not a summary of others. */
function explain(errors: OutputUnit[], schema: Schema): string {
  const specific = errors.filter((error) => !/subschema|properties/.test(error.error));
  const error = specific.at(-1) ?? errors.at(-1);
  if (!error) return 'This value is not allowed.';
  const bound = (name: string) => String(schema[name]);
  switch (error.keyword) {
    case 'minimum':
      return `Must be at least ${bound('minimum')}.`;
    case 'maximum':
      return `Must be at most ${bound('maximum')}.`;
    case 'exclusiveMinimum':
      return `Must be more than ${bound('exclusiveMinimum')}.`;
    case 'exclusiveMaximum':
      return `Must be less than ${bound('exclusiveMaximum')}.`;
    case 'minLength':
      return `Must be at least ${bound('minLength')} characters long.`;
    case 'maxLength':
      return `Must be at most ${bound('maxLength')} characters long.`;
    case 'pattern':
      return `Must match the pattern ${bound('pattern')}.`;
    case 'multipleOf':
      return `Must be a multiple of ${bound('multipleOf')}.`;
    case 'type':
      return `Must be of type ${JSON.stringify(schema.type)}.`;
    case 'enum':
      return 'Must be one of the options.';
    case 'minItems':
      return `Choose at least ${bound('minItems')}.`;
    case 'maxItems':
      return `Choose at most ${bound('maxItems')}.`;
    default:
      return error.error.replace(/^Instance/, 'The value');
  }
}
