import { Validator, type OutputUnit } from '@cfworker/json-schema';

// A rubric field is generated from its spec's JSON Schema, and its value is checked against that
// same schema in the browser before anything is sent. The validator is @cfworker/json-schema: it
// interprets the schema (Ajv generates code with `new Function`, which the app's CSP forbids).

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The input a schema gets. */
export type FieldKind =
  | { kind: 'scale'; options: number[] } // a bounded integer with few steps: one choice per step
  | { kind: 'choice'; options: JsonValue[] } // an enum
  | { kind: 'boolean'; options: [true, false] } // yes / no
  | { kind: 'text'; multiline: boolean }
  | { kind: 'number'; integer: boolean }
  | { kind: 'json' }; // anything else: JSON typed by hand

/** A bounded integer with at most this many steps is a scale; wider ranges take a number field. */
const MAX_SCALE_STEPS = 11;

type Schema = Record<string, unknown>;

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
  if (Array.isArray(schema.enum)) return { kind: 'choice', options: schema.enum as JsonValue[] };
  if ('const' in schema) return { kind: 'choice', options: [schema.const as JsonValue] };
  const type = typeOf(schema);
  if (type === 'boolean') return { kind: 'boolean', options: [true, false] };
  if (type === 'integer') {
    const low = typeof schema.minimum === 'number' ? Math.ceil(schema.minimum) : typeof schema.exclusiveMinimum === 'number' ? Math.floor(schema.exclusiveMinimum) + 1 : undefined;
    const high = typeof schema.maximum === 'number' ? Math.floor(schema.maximum) : typeof schema.exclusiveMaximum === 'number' ? Math.ceil(schema.exclusiveMaximum) - 1 : undefined;
    if (low !== undefined && high !== undefined && high >= low && high - low < MAX_SCALE_STEPS) {
      return { kind: 'scale', options: Array.from({ length: high - low + 1 }, (_, i) => low + i) };
    }
    return { kind: 'number', integer: true };
  }
  if (type === 'number') return { kind: 'number', integer: false };
  if (type === 'string') return { kind: 'text', multiline: typeof schema.maxLength !== 'number' || schema.maxLength > 120 };
  return { kind: 'json' };
}

/** The options a digit key picks from (the k-th option), or none for typed fields. */
export function fieldOptions(kind: FieldKind): JsonValue[] {
  return kind.kind === 'scale' || kind.kind === 'choice' || kind.kind === 'boolean' ? kind.options : [];
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
    default:
      return error.error.replace(/^Instance/, 'The value');
  }
}
