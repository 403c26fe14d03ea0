import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { invalid } from './errors.ts';

// Annotation specs hold JSON Schema (draft 2020-12), compiled by Ajv in strict mode so that a
// misspelt keyword is an error rather than a silently ignored constraint.
const ajv = new Ajv2020({ strict: true, allErrors: false, validateSchema: true });
(addFormats as unknown as (ajv: Ajv2020) => void)(ajv);

const compiled = new Map<string, ValidateFunction>();

/** Compiles a schema or throws a 400 saying why it is not valid JSON Schema. */
export function compileFieldSchema(schema: Record<string, unknown>, cacheKey?: string): ValidateFunction {
  const cached = cacheKey ? compiled.get(cacheKey) : undefined;
  if (cached) return cached;
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw invalid(`field_schema is not a valid JSON Schema: ${(error as Error).message}.`);
  }
  if (cacheKey) compiled.set(cacheKey, validate);
  return validate;
}

/** The first problem of a value against a compiled schema, as a sentence fragment. */
export function schemaProblem(validate: ValidateFunction, value: unknown): string | null {
  if (validate(value)) return null;
  const first = validate.errors?.[0];
  return first ? `${first.instancePath || '(value)'} ${first.message ?? 'is invalid'}` : 'is invalid';
}
