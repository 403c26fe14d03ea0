/** Characters of a preview: one or two lines of a row, cut on the page by CSS, not here. */
const PREVIEW_CHARS = 160;

/**
 * A call's inputs or output as a short line of text: its string values (then numbers and booleans)
 * in document order, joined by " · "; keys and punctuation are left out, so a chat reads as its
 * words. `—` for nothing.
 */
export function previewText(value: unknown): string {
  const parts: string[] = [];
  let length = 0;
  const visit = (node: unknown): void => {
    if (length >= PREVIEW_CHARS) return;
    if (typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean') {
      const text = String(node).replace(/\s+/g, ' ').trim();
      if (!text) return;
      parts.push(text);
      length += text.length + 3;
    } else if (Array.isArray(node)) {
      for (const item of node) visit(item);
    } else if (node && typeof node === 'object') {
      for (const item of Object.values(node)) visit(item);
    }
  };
  visit(value);
  const text = parts.join(' · ');
  if (!text) return '—';
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS - 1)}…` : text;
}
