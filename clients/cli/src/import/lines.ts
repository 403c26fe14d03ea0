import { createReadStream, statSync, type ReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { CliError, EXIT } from '../errors.ts';

export type Line = { number: number; text: string };

/** A JSON Lines source: a file or stdin (`-`), read line by line, never whole. */
export type LineSource = {
  lines: AsyncIterable<Line>;
  /** The input's size in bytes, when it is a regular file. */
  size: number | undefined;
  close(): void;
};

export function openLines(path: string): LineSource {
  let stream: NodeJS.ReadableStream;
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
  const reader = createInterface({ input: stream, crlfDelay: Infinity });
  async function* numbered(): AsyncGenerator<Line> {
    let number = 0;
    for await (const text of reader) yield { number: ++number, text };
  }
  return {
    lines: numbered(),
    size,
    close: () => {
      reader.close();
      if (stream !== process.stdin) (stream as ReadStream).destroy();
    },
  };
}
