/**
 * A field's path as people read it: `batch[3].payload.note`. A module of its own, without zod: the
 * CLI words a bad line's reason as the server does, and loading every wire schema for it cost the
 * CLI 25–30 MB of RSS.
 */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('').replace(/^\./, '');
}
