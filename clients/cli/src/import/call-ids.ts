import { inputKey, lineId } from './ids.ts';
import { lineText, openLines } from './lines.ts';

/** A line of a calls file: the id `import calls` stores it under, or why it has none. */
export type CallIdLine = { line: number; id: string } | { line: number; bad: string };

/**
 * The ids of the calls in a JSON Lines file of calls, as `import calls` stores them: a line's own
 * `id`, else the id it derives from the input and the line (ids.ts). Blank lines are skipped.
 */
export async function* callIdsOf(path: string, maxLineBytes: number): AsyncGenerator<CallIdLine> {
  const source = openLines(path, maxLineBytes);
  let key: string | undefined;
  let number = 0;
  try {
    for await (const chunk of source.chunks) {
      for (const line of chunk.lines) {
        number++;
        if (typeof line !== 'string' && 'tooLong' in line) {
          key ??= inputKey(line.head);
          yield { line: number, bad: `longer than ${maxLineBytes.toLocaleString('en')} bytes: not read` };
          continue;
        }
        const text = lineText(line);
        key ??= inputKey(text);
        if (!text.trim()) continue;
        let record: unknown;
        try {
          record = JSON.parse(text);
        } catch {
          yield { line: number, bad: 'not valid JSON' };
          continue;
        }
        if (typeof record !== 'object' || record === null || Array.isArray(record)) yield { line: number, bad: 'not a JSON object' };
        else {
          const id = (record as { id?: unknown }).id;
          yield { line: number, id: typeof id === 'string' ? id : lineId('calls', key, number, text) };
        }
      }
    }
  } finally {
    source.close();
  }
}
