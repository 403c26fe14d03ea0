import fc from 'fast-check';

/** The part of JSON Schema the OpenAPI document uses for request bodies. */
export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
};

/** Values for named properties, used instead of the schema's (e.g. `project_id` from the callers' projects). */
export type Overrides = Record<string, fc.Arbitrary<unknown>>;

const MAX_DEPTH = 4;

/**
 * Arbitrary values that satisfy a JSON Schema, or nearly: enough of the keywords are honoured
 * (types, required and optional properties, enums, patterns, string and array bounds, integer
 * ranges, `$ref` into the document's components) that most generated bodies get past validation
 * and reach the procedures. Free-form values (`{}` or recursive "any JSON" schemas) stay shallow.
 */
export function schemaArbitrary(schema: JsonSchema, components: Record<string, JsonSchema>, overrides: Overrides = {}): fc.Arbitrary<unknown> {
  const build = (s: JsonSchema, depth: number): fc.Arbitrary<unknown> => {
    if (s.$ref) {
      const target = components[s.$ref.replace('#/components/schemas/', '')];
      return target && depth < MAX_DEPTH ? build(target, depth + 1) : fc.constant(null);
    }
    if (s.enum) return fc.constantFrom(...s.enum);
    if (s.anyOf) return fc.oneof(...s.anyOf.map((alt) => build(alt, depth)));
    const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
    if (types.length > 1) return fc.oneof(...types.map((type) => build({ ...s, type }, depth)));
    switch (types[0]) {
      case 'string':
        return stringArbitrary(s);
      case 'integer':
        return fc.integer({ min: Math.max(s.minimum ?? -1000, -1e6), max: Math.min(s.maximum ?? 1000, 1e6) });
      case 'number':
        return fc.double({ noNaN: true, noDefaultInfinity: true, min: s.minimum ?? -1e9, max: s.maximum ?? 1e9 });
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      case 'array':
        return fc.array(s.items && depth < MAX_DEPTH ? build(s.items, depth + 1) : fc.constant(null), {
          minLength: s.minItems ?? 0,
          maxLength: Math.min(s.maxItems ?? 4, 4),
        });
      case 'object':
        return objectArbitrary(s, depth);
      default:
        return depth < MAX_DEPTH ? fc.jsonValue({ maxDepth: 2 }) : fc.constant(null);
    }
  };

  const objectArbitrary = (s: JsonSchema, depth: number): fc.Arbitrary<unknown> => {
    if (!s.properties) {
      // A free-form object (payload, inputs, field_schema): a few JSON values.
      const values = typeof s.additionalProperties === 'object' && depth < MAX_DEPTH ? build(s.additionalProperties, depth + 1) : fc.jsonValue({ maxDepth: 2 });
      return fc.dictionary(fc.string({ maxLength: 12 }), values, { maxKeys: 4 });
    }
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, property] of Object.entries(s.properties)) record[name] = overrides[name] ?? build(property, depth + 1);
    return fc.record(record, { requiredKeys: (s.required ?? []).filter((name) => name in record) });
  };

  return build(schema, 0);
}

function stringArbitrary(s: JsonSchema): fc.Arbitrary<string> {
  if (s.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (s.format === 'uuid') return fc.uuid({ version: 7 });
  const minLength = s.minLength ?? 0;
  const maxLength = Math.min(s.maxLength ?? 64, 64);
  if (s.pattern) {
    return fc.stringMatching(new RegExp(s.pattern)).filter((text) => text.length >= minLength && text.length <= (s.maxLength ?? Infinity));
  }
  const bounds = { minLength, maxLength: Math.max(minLength, maxLength) };
  // Mostly plain text; sometimes any code point (U+0000 included), which the server must refuse or store intact.
  return fc.oneof(
    { arbitrary: fc.string({ ...bounds, unit: 'grapheme-ascii' }), weight: 4 },
    { arbitrary: fc.string({ ...bounds, unit: 'grapheme' }), weight: 1 },
    { arbitrary: fc.string({ ...bounds, unit: 'binary' }), weight: 1 },
  );
}
