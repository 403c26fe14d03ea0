// Text that no database here can store faithfully: U+0000 (PostgreSQL text and jsonb refuse it;
// SQLite cuts strings at it) and unpaired UTF-16 surrogates (not Unicode text at all). Refused
// with a 400 naming the field, before any procedure sees it.

export type TextProblem = { path: (string | number)[]; message: string };

/** A value `locate` has still to look at, with the way back to the root (a path is built only for a problem). */
type Pending = { value: unknown; key: string | number; parent: Pending | undefined };

/**
 * The first string (or object key) of a JSON value that cannot be stored, or null. A value with
 * none, the usual case, is walked once without building anything per node (a batch of 1,000
 * feedback records has some 15,000); only a value that has one is walked again to say where.
 */
export function findUnstorableText(root: unknown): TextProblem | null {
  return holdsUnstorableText(root) ? locate(root) : null;
}

/**
 * Whether any string or key of the value is unstorable. Both walks use an explicit stack, so any
 * depth costs heap in proportion to the value, never the call stack.
 */
function holdsUnstorableText(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (unstorable(value)) return true;
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) stack.push(value[i]);
    } else if (value !== null && typeof value === 'object') {
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        if (unstorable(key)) return true;
        stack.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/** The first problem in document order, with its path: each node remembers the way back to the root. */
function locate(root: unknown): TextProblem | null {
  const stack: Pending[] = [{ value: root, key: '', parent: undefined }];
  while (stack.length) {
    const node = stack.pop()!;
    const value = node.value;
    if (typeof value === 'string') {
      if (unstorable(value)) return { path: pathOf(node), message: describe(value) };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], key: i, parent: node });
    } else if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        if (unstorable(key)) return { path: [...pathOf(node), key], message: `key ${describe(key)}` };
        stack.push({ value: (value as Record<string, unknown>)[key], key, parent: node });
      }
    }
  }
  return null;
}

function pathOf(node: Pending): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at: Pending | undefined = node; at?.parent; at = at.parent) path.push(at.key);
  return path.reverse();
}

function unstorable(text: string): boolean {
  return text.includes('\u0000') || !text.isWellFormed();
}

function describe(text: string): string {
  return text.includes('\u0000') ? 'must not contain U+0000' : 'must not contain an unpaired surrogate';
}
