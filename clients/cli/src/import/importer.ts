import { Batcher, type BadLine, type OnError } from './batcher.ts';
import { inputKey, lineId } from './ids.ts';
import { nestsDeeperThan } from './json-depth.ts';
import { lineText as textOf, openLines, type LongLine } from './lines.ts';
import type { RetryPolicy } from '../retry.ts';
import type { Progress } from '../output.ts';
import type { Failure } from '../errors.ts';
import { CliError, EXIT } from '../errors.ts';

export type ImportKind = 'calls' | 'feedback';

export type ImportOptions = {
  kind: ImportKind;
  path: string;
  project?: string;
  batchSize: number;
  concurrency: number;
  onError: OnError;
  /** Longest line read: the server's body limit (a longer line is a bad line, never parsed). */
  maxLineBytes: number;
  /** Deepest nesting of a request body the server takes (its batch adds two levels to a line). */
  maxDepth: number;
  retry: RetryPolicy;
  send(records: Record<string, unknown>[]): Promise<unknown>;
  progress: Progress;
  /** Called for each bad line as it is found (the command prints it). */
  onBadLine(bad: BadLine): void;
};

export type ImportSummary = {
  kind: ImportKind;
  lines_read: number;
  records: number;
  stored: number;
  stored_lines: [number, number][];
  bad_lines: number;
  /** The first bad lines (at most 1,000), each with the server's reason. */
  bad: BadLine[];
  stopped_at_line: number | null;
  fatal: Pick<Failure, 'status' | 'reason' | 'code'> | null;
  retries: number;
  seconds: number;
  records_per_s: number;
};

const MAX_LISTED_BAD = 1000;

/**
 * The line lengths (characters) of the records waiting and in flight, at most: with their parsed
 * values and request bodies they stay well inside the CLI's 96 MB heap. A longer line is sent alone.
 */
const HELD_SIZE = 16 * 1024 * 1024;

/** The levels `{"batch": [ … ]}` puts around each line in the request body. */
const BATCH_LEVELS = 2;

/** Why a line without project_id is bad when no --project names one. */
const NO_PROJECT = 'has no project_id, and no --project names one';

/** Parses a line into a record: a JSON object, with project_id and a derived id filled in. */
function parseRecord(text: string, options: ImportOptions, key: string, line: number): Record<string, unknown> | string {
  const depth = options.maxDepth - BATCH_LEVELS;
  if (nestsDeeperThan(text, depth)) {
    return `nests objects and arrays deeper than ${depth} levels (the server takes ${options.maxDepth} in a request, whose batch adds ${BATCH_LEVELS})`;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not valid JSON: ${(error as Error).message}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const record = value as Record<string, unknown>;
  if (record.project_id === undefined) {
    if (!options.project) return NO_PROJECT;
    record.project_id = options.project;
  }
  if (record.id === undefined) record.id = lineId(options.kind, key, line, text);
  return record;
}


/**
 * The record of a line read whole (null for a blank line), or why it has none. Its text lives only
 * here, so a long line's text is garbage before its record is sent.
 */
function readRecord(line: string | LongLine, options: ImportOptions, key: string, number: number): Record<string, unknown> | string | null {
  const text = textOf(line);
  return text.trim() ? parseRecord(text, options, key, number) : null;
}

/** Streams a JSON Lines input into the server in batches; answers what was stored and what was not. */
export async function runImport(options: ImportOptions): Promise<ImportSummary> {
  const started = performance.now();
  const source = openLines(options.path, options.maxLineBytes);
  const bad: BadLine[] = [];
  let badCount = 0;
  let retries = 0;
  let stoppedAt: number | null = null;
  const noteBad = (entry: BadLine) => {
    badCount++;
    if (bad.length < MAX_LISTED_BAD) bad.push(entry);
    if (options.onError === 'stop') stoppedAt = stoppedAt === null ? entry.line : Math.min(stoppedAt, entry.line);
    options.onBadLine(entry);
  };
  const batcher = new Batcher({
    send: options.send,
    batchSize: options.batchSize,
    concurrency: options.concurrency,
    heldSize: HELD_SIZE,
    onError: options.onError,
    retry: { ...options.retry, onRetry: (failure, attempt) => (retries++, options.retry.onRetry?.(failure, attempt)) },
    onBadLine: noteBad,
    onStored: () => options.progress.update(batcher.stored, storedShare()),
  });

  let key: string | undefined;
  let linesRead = 0;
  let records = 0;
  let bytesRead = 0;
  // The share stored: records stored over the records the whole file holds, estimated from the
  // bytes read so far (the reader runs ahead of what is stored, so its position would not do).
  const storedShare = () => (source.size && records ? Math.min(1, batcher.stored / ((records * source.size) / bytesRead)) : undefined);
  try {
    reading: for await (const chunk of source.chunks) {
      bytesRead += chunk.bytes;
      for (const line of chunk.lines) {
        if (batcher.stopped) break reading;
        const number = ++linesRead;
        let record: Record<string, unknown> | string | null;
        let size = 0;
        if (typeof line !== 'string' && 'tooLong' in line) {
          key ??= inputKey(line.head);
          record = `longer than ${options.maxLineBytes.toLocaleString('en')} bytes (--max-line-bytes): not parsed`;
        } else {
          // A line is decoded and parsed once the records held leave room for it.
          size = typeof line === 'string' ? line.length : line.bytes.length;
          if (!batcher.hasRoom(size)) {
            await batcher.makeRoom(size);
            if (batcher.stopped) break reading;
          }
          key ??= inputKey(textOf(line));
          record = readRecord(line, options, key, number);
          if (record === null) continue; // blank lines hold no record
        }
        if (typeof record === 'string') {
          // The first record says how the file was meant: without project ids, --project was forgotten.
          if (record === NO_PROJECT && records === 0) throw new CliError(`line ${number} has no project_id: pass --project <entity>/<project>`, EXIT.usage);
          noteBad({ line: number, reason: record, status: null });
          if (options.onError === 'stop') {
            await batcher.flush(); // the lines before it are sent; nothing after
            batcher.stop();
            break reading;
          }
          continue;
        }
        records++;
        if (batcher.add({ line: number, record, size })) await batcher.flush();
      }
    }
    await batcher.finish();
  } finally {
    source.close();
    // Cleared before anything else is said: the summary, or the error that ended the run.
    options.progress.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    kind: options.kind,
    lines_read: linesRead,
    records,
    stored: batcher.stored,
    stored_lines: batcher.storedRanges(),
    bad_lines: badCount,
    bad: bad.sort((a, b) => a.line - b.line),
    stopped_at_line: stoppedAt,
    fatal: batcher.fatal ? { status: batcher.fatal.failure.status, reason: batcher.fatal.failure.reason, code: batcher.fatal.failure.code } : null,
    retries,
    seconds: +seconds.toFixed(3),
    records_per_s: seconds > 0 ? Math.round(batcher.stored / seconds) : 0,
  };
}
