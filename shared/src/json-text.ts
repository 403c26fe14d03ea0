/**
 * Scanning a JSON text held as a string, for the measures taken before JSON.parse builds anything
 * (the server's weight of a stored record, the CLI's depth of an imported line). A module of its
 * own, without zod, so the CLI loads no wire schema for it.
 */

const BACKSLASH = 0x5c;

/** The index of the quote that closes a string whose content starts at `from`, or the text's length. */
export function closingQuote(text: string, from: number): number {
  for (let at = from; ; ) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    // Escaped when an odd number of backslashes precede it.
    let backslashes = 0;
    for (let j = quote - 1; j >= from && text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}
