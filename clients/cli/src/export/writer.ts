import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';

/** Where an export's bytes go: a file or stdout, waiting whenever the output is full. */
export type ByteSink = {
  write(bytes: Uint8Array): Promise<void>;
  close(): Promise<void>;
};

/** The encoding (JSON Lines or CSV) is @loupe/client/export's, the same as the web app's downloads. */
export function openSink(path: string | undefined): ByteSink {
  const out: Writable = path ? createWriteStream(path) : process.stdout;
  const finished = path ? once(out, 'finish') : Promise.resolve();
  return {
    async write(bytes) {
      if (!out.write(bytes)) await once(out, 'drain');
    },
    async close() {
      if (path) {
        out.end();
        await finished;
      }
    },
  };
}
