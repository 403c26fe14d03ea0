import { createReadStream, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { CliError, EXIT } from '../errors.ts';

/** The lines that one read of the input completed, and the bytes that read brought. */
export type LineChunk = { lines: string[]; bytes: number };

/** A JSON Lines source: a file or stdin (`-`), read chunk by chunk, never whole. */
export type LineSource = {
  chunks: AsyncIterable<LineChunk>;
  /** The input's size in bytes, when it is a regular file. */
  size: number | undefined;
  close(): void;
};

/** Where lines end, as node:readline has them: `\r\n`, `\n` or a lone `\r`. */
const LINE_END = /\r?\n|\r(?!\n)/g;

/**
 * Lines as node:readline splits them (line numbers, and so derived ids, depend on it): at `\r\n`,
 * `\n` or a lone `\r`, a `\r\n` split between two reads counting once, and a last line without an
 * ending counting when it is not empty. Handed over a read at a time, not a line at a time:
 * readline's iterator and a generator over it cost a promise and an object per line, more than
 * parsing the line.
 */
async function* splitLines(stream: AsyncIterable<Buffer>): AsyncGenerator<LineChunk> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let afterReturn = false;
  for await (const bytes of stream) {
    let text = decoder.write(bytes);
    if (afterReturn && text.charCodeAt(0) === 10) text = text.slice(1);
    afterReturn = false;
    if (!text) {
      yield { lines: [], bytes: bytes.length };
      continue;
    }
    text = rest + text;
    const lines: string[] = [];
    let start = 0;
    LINE_END.lastIndex = 0;
    for (let end = LINE_END.exec(text); end; end = LINE_END.exec(text)) {
      lines.push(text.slice(start, end.index));
      start = LINE_END.lastIndex;
    }
    rest = text.slice(start);
    afterReturn = text.charCodeAt(text.length - 1) === 13;
    yield { lines, bytes: bytes.length };
  }
  if (rest) yield { lines: [rest], bytes: 0 };
}

export function openLines(path: string): LineSource {
  let stream: NodeJS.ReadableStream & AsyncIterable<Buffer>;
  let size: number | undefined;
  if (path === '-') {
    stream = process.stdin;
  } else {
    try {
      const stat = statSync(path);
      if (!stat.isFile()) throw new CliError(`not a file: ${path}`, EXIT.usage);
      size = stat.size;
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError(`cannot read ${path}: ${(error as Error).message}`, EXIT.usage);
    }
    stream = createReadStream(path, { highWaterMark: 1 << 20 });
  }
  return {
    chunks: splitLines(stream),
    size,
    close: () => {
      if (stream !== process.stdin) (stream as ReturnType<typeof createReadStream>).destroy();
    },
  };
}
