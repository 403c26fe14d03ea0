import { createReadStream, statSync } from 'node:fs';
import { CliError, EXIT } from '../errors.ts';

/**
 * A line of the input: its text; a long line's bytes, decoded only when the line's turn comes (they
 * wait outside the heap); or, past the limit, a line too long, of which only its head is kept (for
 * the input key).
 */
export type Line = string | LongLine | TooLongLine;
export type LongLine = { bytes: Buffer };

/** A line read whole, as text. */
export const lineText = (line: string | LongLine): string => (typeof line === 'string' ? line : line.bytes.toString('utf8'));
export type TooLongLine = { tooLong: true; head: string };

/** The lines that one read of the input completed, and the bytes that read brought. */
export type LineChunk = { lines: Line[]; bytes: number };

/** A JSON Lines source: a file or stdin (`-`), read chunk by chunk, never whole. */
export type LineSource = {
  chunks: AsyncIterable<LineChunk>;
  /** The input's size in bytes, when it is a regular file. */
  size: number | undefined;
  close(): void;
};

const LF = 0x0a;
const CR = 0x0d;
/** What a too-long line keeps of its text: enough to tell inputs apart when it is the first line. */
const HEAD_BYTES = 1024;
/** Lines from this length on are handed over as bytes. */
const LONG_BYTES = 1024 * 1024;

/** Where lines end, as node:readline has them: `\r\n`, `\n` or a lone `\r`. */
const LINE_END = /\r?\n|\r(?!\n)/g;

/** The first line ending's byte at or after `from`, or -1. */
function firstEnd(bytes: Buffer, from: number): number {
  const lf = bytes.indexOf(LF, from);
  const cr = bytes.indexOf(CR, from);
  return lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
}

/**
 * Lines as node:readline splits them (line numbers, and so derived ids, depend on it): at `\r\n`,
 * `\n` or a lone `\r`, a `\r\n` split between two reads counting once, and a last line without an
 * ending counting when it is not empty. Handed over a read at a time, not a line at a time:
 * readline's iterator and a generator over it cost a promise and an object per line, more than
 * parsing the line.
 *
 * Line endings are found in the bytes (their bytes never occur inside a UTF-8 sequence). The lines
 * a read holds whole are decoded at once; a line that spans reads stays in Buffers, outside the
 * small heap the CLI runs with, until it ends, and past `maxLineBytes` it is dropped and the rest
 * of it skipped: a file without line endings costs no more memory than one line at the limit.
 */
export async function* splitLines(stream: AsyncIterable<Buffer>, maxLineBytes: number): AsyncGenerator<LineChunk> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let head: string | undefined; // set while the current line is too long and being skipped
  let afterReturn = false;
  // A too-long line's head: its first bytes, as many whichever way the input was cut into reads.
  const headBytes = Math.min(maxLineBytes + 1, HEAD_BYTES);
  /** Adds bytes to the line being read; past the limit, keeps only its head. */
  const extend = (part: Buffer) => {
    if (head !== undefined || !part.length) return;
    pending.push(part);
    pendingBytes += part.length;
    if (pendingBytes > maxLineBytes) {
      head = Buffer.concat(pending, headBytes).toString('utf8');
      pending = [];
      pendingBytes = 0;
    }
  };
  /** The line read so far, ended. */
  const take = (): Line => {
    let line: Line;
    if (head !== undefined) line = { tooLong: true, head };
    else if (pendingBytes >= LONG_BYTES) line = { bytes: Buffer.concat(pending, pendingBytes) };
    else line = Buffer.concat(pending, pendingBytes).toString('utf8');
    pending = [];
    pendingBytes = 0;
    head = undefined;
    return line;
  };
  /** A line that a read holds whole, checked against the limit. */
  const whole = (text: string): Line => {
    if (text.length * 3 <= maxLineBytes || Buffer.byteLength(text) <= maxLineBytes) return text;
    return { tooLong: true, head: Buffer.from(text.slice(0, headBytes)).subarray(0, headBytes).toString('utf8') };
  };
  for await (const bytes of stream) {
    const lines: Line[] = [];
    let start: number = afterReturn && bytes[0] === LF ? 1 : 0;
    afterReturn = false;
    const first = firstEnd(bytes, start);
    if (first >= 0) {
      // The line begun in earlier reads ends here.
      extend(bytes.subarray(start, first));
      lines.push(take());
      start = first + (bytes[first] === CR && bytes[first + 1] === LF ? 2 : 1);
      // The lines after it that this read ends, decoded at once and split as text.
      const last = Math.max(bytes.lastIndexOf(LF), bytes.lastIndexOf(CR));
      if (last >= start) {
        const text = bytes.toString('utf8', start, last + 1);
        let from = 0;
        LINE_END.lastIndex = 0;
        for (let end = LINE_END.exec(text); end; end = LINE_END.exec(text)) {
          lines.push(whole(text.slice(from, end.index)));
          from = LINE_END.lastIndex;
        }
        start = last + 1;
      }
      afterReturn = bytes[start - 1] === CR && start === bytes.length;
    }
    extend(bytes.subarray(start));
    yield { lines, bytes: bytes.length };
  }
  if (pendingBytes || head !== undefined) yield { lines: [take()], bytes: 0 };
}

export function openLines(path: string, maxLineBytes: number): LineSource {
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
    // 64 KiB reads, the stream's default: reads of 1 MiB, each decoded whole, took 9 MB more peak
    // RSS and were no faster.
    stream = createReadStream(path, { highWaterMark: 64 * 1024 });
  }
  return {
    chunks: splitLines(stream, maxLineBytes),
    size,
    close: () => {
      if (stream !== process.stdin) (stream as ReturnType<typeof createReadStream>).destroy();
    },
  };
}
