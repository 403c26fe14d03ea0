import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats, { type FormatName } from 'ajv-formats';
import { LRUCache } from 'lru-cache';
import { invalid } from './errors.ts';
import { linearRegExpEngine, PatternError } from './json-schema-patterns.ts';
import { linearUniqueItems } from './json-schema-unique-items.ts';

// Annotation specs hold JSON Schema (draft 2020-12) written by any member, and Ajv turns each one
// into code that runs on every annotation value: to Ajv they are untrusted input. So:
// - each spec compiles in an Ajv instance of its own: a `$id` is never registered where another
//   spec (or project) could collide with it or `$ref` it, and nothing is ever fetched (no
//   loadSchema: a `$ref` to another document fails to compile);
// - patterns run on RE2 (json-schema-patterns.ts) and uniqueItems in linear time
//   (json-schema-unique-items.ts);
// - size and depth are bounded: Ajv's code is ~18× the schema, a 16 KiB schema compiles in
//   ~150 ms and a 64 KiB one took 1.5 s and gave a validator that overflowed the stack;
// - compiled validators live in an LRU cache; a spec evicted from it is compiled again from storage.
// Strict mode stays on, so that a misspelt keyword is an error rather than an ignored constraint.

const FIELD_SCHEMA_LIMITS = {
  /** Largest field_schema, in bytes of its JSON. */
  bytes: 16 * 1024,
  /** Deepest nesting of objects and arrays (the schema itself is level 1). */
  depth: 32,
  /** Most distinct regular expressions (pattern, patternProperties). */
  patterns: 16,
} as const;

const addFormatsTo = addFormats as unknown as (ajv: Ajv2020, formats?: FormatName[]) => Ajv2020;

// The formats a field_schema may use: all of ajv-formats but "regex", which would compile the
// value itself as a V8 RegExp, and "url" (deprecated by ajv-formats), whose RegExp is quadratic:
// 25,000 characters took 0.3 s. (`satisfies` keeps this list complete as ajv-formats grows.)
const FORMATS = Object.keys({
  date: 1, time: 1, 'date-time': 1, 'iso-time': 1, 'iso-date-time': 1, duration: 1, uri: 1, 'uri-reference': 1,
  'uri-template': 1, email: 1, hostname: 1, ipv4: 1, ipv6: 1, uuid: 1, 'json-pointer': 1, 'json-pointer-uri-fragment': 1,
  'relative-json-pointer': 1, byte: 1, int32: 1, int64: 1, float: 1, double: 1, password: 1, binary: 1,
} satisfies Record<Exclude<FormatName, 'regex' | 'url'>, 1>) as FormatName[];

// Checks schemas against the draft 2020-12 meta-schema (with every format, so that a pattern must
// parse as an ECMAScript RegExp); it never compiles, runs or keeps a field_schema. The meta-schema
// is chosen here, not by the schema's `$schema`: Ajv would resolve (and keep) any pointer into its
// meta-schemas there, and check the schema against that part only.
const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';
const metaSchemaChecker = new Ajv2020({ strict: true });
addFormatsTo(metaSchemaChecker);
const validateAgainstMetaSchema = metaSchemaChecker.getSchema(DRAFT_2020_12)!;

/**
 * An LRU cache of compiled field schemas, bounded in entries and in the schemas' total bytes: a
 * compiled schema holds ~20× its JSON size of heap (plus ~6 KB), and the server's heap is 192 MB.
 */
export function fieldSchemaCache(maxEntries = 1000, maxBytes = 2 * 1024 * 1024): LRUCache<string, ValidateFunction> {
  return new LRUCache({ max: maxEntries, maxSize: maxBytes });
}

const compiled = fieldSchemaCache();

/**
 * Compiles a schema (or answers it from the cache by `cacheKey`), or throws a 400 saying why it is
 * not an acceptable JSON Schema.
 */
export function compileFieldSchema(schema: Record<string, unknown>, cacheKey?: string, cache = compiled): ValidateFunction {
  const cached = cacheKey ? cache.get(cacheKey) : undefined;
  if (cached) return cached;
  const bytes = checkBounds(schema);
  if (schema.$schema !== undefined && schema.$schema !== DRAFT_2020_12 && schema.$schema !== `${DRAFT_2020_12}#`) {
    throw invalid(`field_schema $schema must be "${DRAFT_2020_12}" when given.`);
  }
  let validate: ValidateFunction;
  try {
    if (!validateAgainstMetaSchema(schema)) throw new Error(metaSchemaChecker.errorsText(validateAgainstMetaSchema.errors, { dataVar: 'field_schema' }));
    validate = isolatedAjv().compile(schema);
  } catch (error) {
    if (error instanceof PatternError) throw invalid(`field_schema ${error.message}.`);
    throw invalid(`field_schema is not a valid JSON Schema: ${(error as Error).message}.`);
  }
  if (cacheKey) cache.set(cacheKey, validate, { size: bytes });
  return validate;
}

/** A fresh Ajv for one schema: compiling in it costs ~0.45 ms more than in a shared one. */
function isolatedAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    allErrors: false,
    validateSchema: false, // done by validateAgainstMetaSchema, compiled once
    // Strict mode would otherwise test each patternProperties pattern against the names in
    // `properties` with a V8 RegExp, while compiling.
    allowMatchingProperties: true,
    code: { regExp: linearRegExpEngine(FIELD_SCHEMA_LIMITS.patterns) },
  });
  addFormatsTo(ajv, FORMATS);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword(linearUniqueItems);
  return ajv;
}

/** Refuses a schema over the depth or size bound (depth first, without recursion); answers its size. */
function checkBounds(schema: Record<string, unknown>): number {
  const { bytes, depth } = FIELD_SCHEMA_LIMITS;
  const stack: [unknown, number][] = [[schema, 1]];
  while (stack.length) {
    const [node, level] = stack.pop()!;
    if (level > depth) throw invalid(`field_schema is nested more than ${depth} levels deep (objects and arrays); at most ${depth} are allowed.`);
    for (const child of Object.values(node as object)) if (child !== null && typeof child === 'object') stack.push([child, level + 1]);
  }
  const size = Buffer.byteLength(JSON.stringify(schema));
  if (size > bytes) throw invalid(`field_schema is ${size} bytes as JSON; at most ${bytes} are allowed.`);
  return size;
}

/** The first problem of a value against a compiled schema, as a sentence fragment. */
export function schemaProblem(validate: ValidateFunction, value: unknown): string | null {
  if (validate(value)) return null;
  const first = validate.errors?.[0];
  return first ? `${first.instancePath || '(value)'} ${first.message ?? 'is invalid'}` : 'is invalid';
}
