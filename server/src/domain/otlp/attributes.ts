import type { Json } from '@loupe/shared';
import type { KeyValues } from './spans.ts';

/** The most dotted segments a key nests into (the call filter's paths have at most 16). */
export const MAX_KEY_SEGMENTS = 16;

type JsonObject = { [key: string]: Json };

/**
 * Attributes as a call keeps them: each dotted key nested by its segments, so that the call
 * filter's dotted paths (`gen_ai.request.model`, `resource.service.name`) reach them.
 * `gen_ai.usage.input_tokens: 10` and `gen_ai.usage.output_tokens: 4` become
 * `{gen_ai: {usage: {input_tokens: 10, output_tokens: 4}}}`.
 *
 * Keys are placed in sorted order, so the result does not depend on the order they came in. Where
 * a key is both a value and the start of a longer key (`a.b: 1` and `a.b.c: 2`), the value keeps its
 * place and the longer key stays whole beside it (`{a: {b: 1, 'b.c': 2}}`); an empty segment
 * (`a..b`) and segments past MAX_KEY_SEGMENTS stay whole too. Values that are themselves objects
 * (OTLP key-value lists) are never merged into. A repeated key keeps its first value. The objects
 * made have no prototype, so a key such as `__proto__` is a plain key.
 */
export function nestedAttributes(attributes: KeyValues, skip?: ReadonlySet<string>): JsonObject {
  const first = new Map<string, Json>();
  for (const [key, value] of attributes) if (!first.has(key) && !skip?.has(key)) first.set(key, value);
  const keys = [...first.keys()].sort();
  const root: JsonObject = Object.create(null);
  // The objects this function made by nesting: the only ones it may add keys to.
  const made = new WeakSet<object>([root]);
  for (const key of keys) {
    const segments = key.split('.');
    let at = root;
    let i = 0;
    for (; i < segments.length - 1 && i < MAX_KEY_SEGMENTS - 1; i++) {
      const segment = segments[i]!;
      if (segment === '') break;
      const next = at[segment];
      if (next === undefined) {
        const object: JsonObject = Object.create(null);
        made.add(object);
        at[segment] = object;
        at = object;
      } else if (typeof next === 'object' && next !== null && made.has(next)) {
        at = next as JsonObject;
      } else {
        break;
      }
    }
    const rest = segments.slice(i).join('.');
    if (!(rest in at)) at[rest] = first.get(key)!;
  }
  return root;
}
