import { closingQuote } from '@loupe/shared/json-text';

const QUOTE = 0x22;

/**
 * Whether a JSON text nests objects and arrays more than `limit` levels deep, from one pass over
 * its characters, before JSON.parse builds anything: a value nested 200,000 levels parses, but
 * every later recursive walk of it (JSON.stringify when it is sent) overflows the stack.
 * Malformed text is measured as far as it goes; JSON.parse reports it afterwards.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  if (text.length <= limit) return false; // each level takes a character
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = closingQuote(text, i + 1);
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
