import type { AnyRouter } from '@trpc/server';

// trpc-to-openapi coerces REST input by setting `def.coerce = true` on the number, boolean, bigint
// and date schemas it finds in a procedure's input — and since the schemas are shared, the `/trpc`
// door then coerces too (null → 0, "false" → true). Loupe's bodies are strict JSON, so once at
// start-up every such schema that was not deliberately built with z.coerce gets a `coerce` that
// always reads false and ignores writes. Zod reads `def.coerce` at parse time, so this holds for
// every later parse through either door.

type Def = { type?: string; coerce?: boolean } & Record<string, unknown>;
const COERCIBLE = new Set(['number', 'boolean', 'bigint', 'date']);

function lock(schema: unknown, seen: Set<unknown>): void {
  const def = (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;
  if (!def || seen.has(def)) return;
  seen.add(def);
  if (COERCIBLE.has(def.type ?? '') && !def.coerce) {
    Object.defineProperty(def, 'coerce', { get: () => false, set: () => {}, enumerable: true, configurable: false });
    return;
  }
  const children: unknown[] = [];
  const push = (value: unknown) => value !== undefined && children.push(value);
  if (def.type === 'object') children.push(...Object.values((def.shape ?? {}) as object));
  for (const key of ['element', 'innerType', 'in', 'out', 'left', 'right', 'keyType', 'valueType', 'rest', 'catchall']) {
    push(def[key]);
  }
  for (const key of ['options', 'items']) if (Array.isArray(def[key])) children.push(...(def[key] as unknown[]));
  for (const child of children) lock(child, seen);
}

/** Makes every procedure input of the router immune to trpc-to-openapi's coercion. */
export function lockInputCoercion(router: AnyRouter): void {
  const seen = new Set<unknown>();
  for (const procedure of Object.values(router._def.procedures as Record<string, { _def: { inputs: unknown[] } }>)) {
    for (const input of procedure._def.inputs) lock(input, seen);
  }
}
