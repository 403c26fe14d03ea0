// Text that no database here can store faithfully: U+0000 (PostgreSQL text and jsonb refuse it;
// SQLite cuts strings at it) and unpaired UTF-16 surrogates (not Unicode text at all). Refused
// with a 400 naming the field, before any procedure sees it.

export type TextProblem = { path: (string | number)[]; message: string };

/** The first string (or object key) of a JSON value that cannot be stored, or null. */
export function findUnstorableText(value: unknown, path: (string | number)[] = []): TextProblem | null {
  if (typeof value === 'string') return unstorable(value) ? { path, message: describe(value) } : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], [...path, i]);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (unstorable(key)) return { path: [...path, key], message: `key ${describe(key)}` };
      const found = findUnstorableText(child, [...path, key]);
      if (found) return found;
    }
  }
  return null;
}

function unstorable(text: string): boolean {
  return text.includes('\u0000') || !text.isWellFormed();
}

function describe(text: string): string {
  return text.includes('\u0000') ? 'must not contain U+0000' : 'must not contain an unpaired surrogate';
}
