/** How a spec's values are summarised across annotators: the majority, the mean, or not at all. */
export type SpecKind = 'nominal' | 'numeric' | 'other';

/**
 * From the spec's JSON Schema, as the agreement endpoint reads levels: `enum`, `boolean` and
 * `string` are nominal (majority value); `integer` and `number` are numeric (mean).
 */
export function specKind(fieldSchema: Record<string, unknown>): SpecKind {
  if (Array.isArray(fieldSchema.enum) || 'const' in fieldSchema) return 'nominal';
  const type = fieldSchema.type;
  if (type === 'boolean' || type === 'string') return 'nominal';
  if (type === 'integer' || type === 'number') return 'numeric';
  return 'other';
}

/** The value given most often; null when there is none or two values tie for first. */
export function majority(values: readonly unknown[]): unknown {
  const counts = new Map<string, { value: unknown; count: number }>();
  for (const value of values) {
    const key = JSON.stringify(value);
    const entry = counts.get(key);
    if (entry) entry.count++;
    else counts.set(key, { value, count: 1 });
  }
  const ranked = [...counts.values()].sort((a, b) => b.count - a.count);
  if (!ranked.length || (ranked.length > 1 && ranked[1]!.count === ranked[0]!.count)) return null;
  return ranked[0]!.value;
}

/** The mean of the numeric values; null when there are none. */
export function mean(values: readonly unknown[]): number | null {
  const numbers = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return numbers.length ? numbers.reduce((a, b) => a + b, 0) / numbers.length : null;
}
